// Conversion of one source image into the files a display is sent. sharp decodes, applies the
// EXIF orientation, resizes (cover crops, contain pads with white) and flattens alpha onto white;
// the quantisation to a fixed palette and the BMP / palette-PNG bytes are ours (see dither.ts,
// bmp.ts, png.ts for why).
import type { Sharp } from 'sharp'
import { loadSharp } from './sharp.js'
import { AppError, appError } from '../errors.js'
import { ERRORS } from '../error-codes.js'
import { encodeIndexedBmp } from './bmp.js'
import { ditherToPalette } from './dither.js'
import { encodeIndexedPng } from './png.js'
import {
  INKS,
  MEASURED_PALETTES,
  PALETTES,
  displayTooLarge,
  ditherOf,
  type DisplayProfile,
  type DitherMethod,
  type Palette,
  type PalettePanel,
  type Variant,
} from './profiles.js'

export type VariantFormat = Variant['format']

/** Decoded, oriented, resized pixels: packed 8-bit RGB, width × height × 3 bytes. */
export type DisplayPixels = { data: Buffer; width: number; height: number }

/**
 * Largest source accepted, in pixels (about 10k × 10k). Far above any provider's output, and it
 * stops a tiny compressed "decompression bomb" from making libvips allocate gigabytes.
 */
const MAX_INPUT_PIXELS = 100_000_000

const WHITE = { r: 255, g: 255, b: 255, alpha: 1 }

/** The input is not an image sharp can decode (or is too large); callers map this to a 4xx or a failed job. */
export class ImageInputError extends AppError {
  constructor(message: string) {
    super(ERRORS.INVALID_IMAGE.status, 'INVALID_IMAGE', message)
    this.name = 'ImageInputError'
  }
}

/** The palette actually used for a profile: anything we do not know is treated as full colour. */
function paletteOf(profile: DisplayProfile): Palette {
  const p = profile.palette
  return p === 'bw' || p === 'gray4' || p === 'spectra6' || p === 'acep7' ? p : 'color'
}

const FORMATS: Record<Palette, VariantFormat[]> = {
  bw: ['bmp1', 'png1'],
  gray4: ['png-gray4'],
  spectra6: ['png-spectra6'],
  acep7: ['png-acep7'],
  color: ['jpeg', 'png'],
}

/** Every format produced for a profile, the main one first. */
export function formatsFor(profile: DisplayProfile): VariantFormat[] {
  return [...FORMATS[paletteOf(profile)]]
}

/** The format a device with this profile should be sent (BMP for 1-bit panels, JPEG for colour). */
export function mainVariant(profile: DisplayProfile): VariantFormat {
  return FORMATS[paletteOf(profile)][0]!
}

const CONTENT_TYPES: Record<VariantFormat, Variant['contentType']> = {
  bmp1: 'image/bmp',
  png1: 'image/png',
  'png-gray4': 'image/png',
  'png-spectra6': 'image/png',
  'png-acep7': 'image/png',
  jpeg: 'image/jpeg',
  png: 'image/png',
}

/** Decode `input` and produce the display's pixels: oriented, resized, alpha on white, sRGB. */
export async function renderForDisplay(input: Buffer, profile: DisplayProfile): Promise<DisplayPixels> {
  const { width, height } = profile
  for (const [name, v] of [
    ['width', width],
    ['height', height],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw appError('INVALID_DISPLAY_PROFILE', `display ${name} must be a positive integer, got ${v}`)
  }
  // Pairing refuses such displays; this guards a profile stored before the bound and direct callers.
  const tooLarge = displayTooLarge(profile)
  if (tooLarge) throw appError('DISPLAY_TOO_LARGE', `The display is larger than any panel this service serves: ${tooLarge}`)
  if (!Buffer.isBuffer(input) || input.length === 0) throw new ImageInputError('image is empty')
  try {
    const sharp = await loadSharp()
    const { data, info } = await sharp(input, { limitInputPixels: MAX_INPUT_PIXELS })
      .rotate() // apply the EXIF orientation, so phone photos are upright
      .resize(width, height, { fit: profile.fit === 'contain' ? 'contain' : 'cover', position: 'centre', background: WHITE })
      .flatten({ background: WHITE })
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true })
    if (info.channels !== 3 || info.width !== width || info.height !== height) {
      // Never expected; a wrong layout would silently scramble the dithered output.
      throw new Error(`unexpected raw layout ${info.width}×${info.height}×${info.channels}`)
    }
    return { data, width, height }
  } catch (err) {
    throw asInputError(err)
  }
}

const FORMAT_PALETTE: Record<Exclude<VariantFormat, 'jpeg' | 'png'>, PalettePanel> = {
  bmp1: 'bw',
  png1: 'bw',
  'png-gray4': 'gray4',
  'png-spectra6': 'spectra6',
  'png-acep7': 'acep7',
}

/**
 * Encode already-rendered pixels as one variant, dithered with `dither` (default: the palette's,
 * see DEFAULT_DITHER).
 */
export async function encodeVariant(pixels: DisplayPixels, format: VariantFormat, dither?: DitherMethod): Promise<Variant> {
  const { width, height } = pixels
  const done = (data: Buffer): Variant => ({ format, contentType: CONTENT_TYPES[format], width, height, data })
  if (format === 'jpeg') return done(await (await fromRaw(pixels)).jpeg({ quality: 85, mozjpeg: true }).toBuffer())
  if (format === 'png') return done(await (await fromRaw(pixels)).png().toBuffer())
  const palette = FORMAT_PALETTE[format]
  const codes = inkCodes(pixels, palette, ditherOf({ dither }, palette))
  return done(
    format === 'bmp1' ? encodeIndexedBmp(codes, width, height, PALETTES.bw, 1) : encodeIndexedPng(codes, width, height, PALETTES[palette]),
  )
}

/**
 * Every variant for `profile`, main format first: bw → BMP + PNG (1 bit), gray4 → 4-grey PNG,
 * spectra6 / acep7 → palette PNG, anything else → JPEG + PNG.
 */
export async function convertForDisplay(input: Buffer, profile: DisplayProfile): Promise<Variant[]> {
  const pixels = await renderForDisplay(input, profile)
  const palette = paletteOf(profile)
  const dither = ditherOf(profile, palette)
  // bw writes two files from the same dithered pixels: dither once.
  if (palette === 'bw') {
    const codes = inkCodes(pixels, 'bw', dither)
    const { width, height } = pixels
    return [
      { format: 'bmp1', contentType: 'image/bmp', width, height, data: encodeIndexedBmp(codes, width, height, PALETTES.bw, 1) },
      { format: 'png1', contentType: 'image/png', width, height, data: encodeIndexedPng(codes, width, height, PALETTES.bw) },
    ]
  }
  const out: Variant[] = []
  for (const f of formatsFor(profile)) out.push(await encodeVariant(pixels, f, dither))
  return out
}

/**
 * Dither to the palette's measured inks, then replace each ink's place in INKS by the panel's own
 * code for it (Spectra 6: blue 5, green 6), the index the file carries.
 */
function inkCodes(pixels: DisplayPixels, palette: PalettePanel, method: DitherMethod): Uint8Array {
  const indices = ditherToPalette(pixels.data, pixels.width, pixels.height, MEASURED_PALETTES[palette], method)
  const codes = INKS[palette].map((i) => i.code)
  if (codes.every((code, i) => code === i)) return indices
  const map = Uint8Array.from(codes)
  for (let i = 0; i < indices.length; i++) indices[i] = map[indices[i]!]!
  return indices
}

async function fromRaw(pixels: DisplayPixels): Promise<Sharp> {
  const sharp = await loadSharp()
  return sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: 3 } })
}

function asInputError(err: unknown): Error {
  if (err instanceof AppError) return err
  // libvips messages sometimes end in a dangling ":" or a newline.
  const msg = (err instanceof Error ? err.message : String(err)).trim().replace(/:$/, '')
  // sharp / libvips wording for undecodable, truncated or oversized input.
  if (
    /unsupported image format|input buffer|corrupt|premature end|pixel limit|bad seek|not a known file format|improper image header|vipsload|read error/i.test(
      msg,
    )
  ) {
    return new ImageInputError(`not a usable image: ${msg}`)
  }
  return err instanceof Error ? err : new Error(msg)
}
