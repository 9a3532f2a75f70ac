// The files a TRMNL frame downloads, as its firmware keeps and draws them.
//
// Names (src/filesystem.cpp, usetrmnl/trmnl-firmware): the firmware stores a downloaded PNG under
// `filename` (cut to 31 characters by filesystem_fix_filename: the first 7 and the last 17 when
// longer) and, at each new download, purges every stored file whose name does not end in a
// 10-digit Unix timestamp less than 24 hours old, and every file sharing the new one's first 13
// characters (an "older version of the same plugin"). So a name here is 13 hex characters that
// identify the bytes, a dash and a 10-digit timestamp: the start of the current 12-hour window. It
// stays the same while the bytes do within a window, a playlist's files all stay cached, and a
// name changes (one download) twice a day at most.
//
// Pictures (src/display.cpp png_draw): from 1.6.6 the firmware inverts a 1-bit palette PNG whose
// first entry is the darker one, and writes 1-bit and 2-bit greyscale PNGs as they are. Every PNG
// a frame gets is therefore greyscale (colour type 0): the service's own 1-bit and 4-grey files
// are palette PNGs, made greyscale here with the same pixels.
import { createHash } from 'node:crypto'
import { encodeGrayPng } from '../images/png.js'
import { loadSharp } from '../images/sharp.js'

/** How long a file name stays the same for the same bytes (under the firmware's 24-hour purge). */
const CACHE_WINDOW_SECONDS = 12 * 3600

/**
 * The name a frame caches a file by: 13 hex characters of `key` (what the bytes are made from),
 * a dash, and the start of the current window as 10 digits; `fresh` uses the current second
 * instead, a name the frame has not cached (to have the same picture drawn again).
 */
export function cacheName(key: string, now: Date, fresh = false): string {
  const seconds = Math.floor(now.getTime() / 1000)
  const windowStart = seconds - (seconds % CACHE_WINDOW_SECONDS)
  const at = fresh ? (seconds === windowStart ? seconds + 1 : seconds) : windowStart
  const id = createHash('sha256').update(key).digest('hex').slice(0, 13)
  return `${id}-${String(at).padStart(10, '0')}`
}

/** IHDR bit depth and colour type, or undefined when `png` is not a PNG. */
function pngKind(png: Buffer): { bitDepth: number; colourType: number } | undefined {
  if (png.length < 33 || png.readUInt32BE(0) !== 0x89504e47 || png.toString('latin1', 12, 16) !== 'IHDR') return undefined
  return { bitDepth: png[24]!, colourType: png[25]! }
}

/**
 * A PNG as greyscale (colour type 0) of `depth` bits: each pixel's grey quantised to the nearest
 * level (the service's files hold only black, white and, for 4 greys, the two levels between,
 * so nothing changes but how the file says it). A file already so is answered as it is.
 */
export async function grayscalePng(png: Buffer, depth: 1 | 2): Promise<Buffer> {
  const kind = pngKind(png)
  if (kind && kind.colourType === 0 && kind.bitDepth === depth) return png
  const sharp = await loadSharp()
  const { data, info } = await sharp(png)
    .flatten({ background: '#ffffff' })
    .toColourspace('b-w')
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true })
  const max = (1 << depth) - 1
  const levels = new Uint8Array(info.width * info.height)
  for (let i = 0; i < levels.length; i++) levels[i] = Math.round((data[i * info.channels]! * max) / 255)
  return encodeGrayPng(levels, info.width, info.height, depth)
}
