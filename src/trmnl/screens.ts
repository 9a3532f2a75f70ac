// The screens the service draws itself for a TRMNL device, at its panel's size, as the file its
// firmware draws (the 1-bit BMP before 1.5.2, a greyscale PNG from then on): the pairing screen
// (the code in large type and a QR code of the pairing link), "paired, nothing sent yet", and the
// frame's name (identify).
import { encodeVariant, renderForDisplay } from '../images/convert.js'
import { loadSharp } from '../images/sharp.js'
import type { DisplayProfile } from '../images/profiles.js'
import { grayscalePng } from './files.js'

/** The file a screen is drawn as: BMP for firmware before 1.5.2, greyscale PNG of 1 or 2 bits after. */
export type ScreenFormat = 'bmp1' | 'png1' | 'png2'
export const SCREEN_FORMATS: readonly ScreenFormat[] = ['bmp1', 'png1', 'png2']

const escapeXml = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * The part of the screen the firmware writes over: on its own pairing screen (display.cpp,
 * display_show_msg FRIENDLY_ID) it prints two centred lines from y 400 on an 800×480 panel and
 * from 140 px plus two lines above the bottom on the X, over the picture it was given. Nothing
 * of ours is drawn in the bottom quarter.
 */
export const FIRMWARE_TEXT_BAND = 0.25

/** Where the QR code is drawn on a setup screen (tests check nothing else is drawn there). */
export function qrBox(width: number, height: number): { x: number; y: number; side: number } {
  const usable = Math.round(height * (1 - FIRMWARE_TEXT_BAND))
  const side = Math.round(Math.min(width * 0.4, usable * 0.8))
  return { x: width - side - Math.round(width * 0.04), y: Math.round((usable - side) / 2), side }
}

async function svgScreen(profile: DisplayProfile, lines: Array<{ text: string; size: number }>, qr?: string): Promise<Buffer> {
  const { width, height } = profile
  const usable = Math.round(height * (1 - FIRMWARE_TEXT_BAND))
  const box = qr ? qrBox(width, height) : undefined
  const qrSvg = qr ? await (await import('qrcode')).default.toString(qr, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' }) : ''
  // Text to the left of the QR code, never under it.
  const textWidth = box ? box.x - Math.round(width * 0.02) : width
  const total = lines.reduce((sum, l) => sum + Math.round(l.size * 1.4), 0)
  let y = Math.max(lines[0]?.size ?? 0, Math.round((usable - total) / 2) + (lines[0]?.size ?? 0))
  const texts = lines.map((l) => {
    // Shrunk to fit its column: every glyph of DejaVu Sans Bold is under 1.1 em wide ('m' and 'W'
    // are about 1.04; the 0.8 em that holds for capitals and digits let lower-case text run into
    // the QR code's margin on the X, 2026-11-28 CI).
    const size = Math.min(l.size, Math.floor((textWidth * 0.95) / Math.max(1, l.text.length * 1.1)))
    const t = `<text x="${Math.round(textWidth / 2)}" y="${y}" font-family="DejaVu Sans, sans-serif" font-size="${size}" font-weight="bold" text-anchor="middle">${escapeXml(l.text)}</text>`
    y += Math.round(l.size * 1.4)
    return t
  })
  const qrImage = box
    ? `<image x="${box.x}" y="${box.y}" width="${box.side}" height="${box.side}" href="data:image/svg+xml;base64,${Buffer.from(qrSvg).toString('base64')}"/>`
    : ''
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#fff"/>${texts.join('')}${qrImage}</svg>`
  return (await loadSharp())(Buffer.from(svg)).png().toBuffer()
}

/** A screen as the file the device draws. */
async function file(profile: DisplayProfile, png: Buffer, format: ScreenFormat): Promise<Buffer> {
  const pixels = await renderForDisplay(png, { ...profile, fit: 'contain' })
  if (format === 'bmp1') return (await encodeVariant(pixels, 'bmp1')).data
  if (format === 'png1') return grayscalePng((await encodeVariant(pixels, 'png1')).data, 1)
  return grayscalePng((await encodeVariant(pixels, 'png-gray4')).data, 2)
}

export async function setupScreen(
  profile: DisplayProfile,
  pinCode: string,
  pairUrl: string,
  format: ScreenFormat = 'bmp1',
): Promise<Buffer> {
  const big = Math.round(profile.height / 7)
  return file(
    profile,
    await svgScreen(
      profile,
      [
        { text: 'Pair this frame', size: Math.round(big / 2) },
        { text: pinCode, size: big },
        { text: 'Type the code in the app, or scan', size: Math.round(big / 3.2) },
      ],
      pairUrl,
    ),
    format,
  )
}

export async function pairedScreen(profile: DisplayProfile, name: string, format: ScreenFormat = 'bmp1'): Promise<Buffer> {
  const size = Math.round(profile.height / 10)
  return file(
    profile,
    await svgScreen(profile, [
      { text: name.slice(0, 40), size },
      { text: 'Paired. Send it a picture from the app.', size: Math.round(size / 2) },
    ]),
    format,
  )
}

/** What identify shows: the frame's name, large, so its owner can tell which one it is. */
export async function identifyScreen(profile: DisplayProfile, name: string, format: ScreenFormat = 'bmp1'): Promise<Buffer> {
  const size = Math.round(profile.height / 6)
  return file(
    profile,
    await svgScreen(profile, [
      { text: 'This is', size: Math.round(size / 2) },
      { text: name.slice(0, 30), size },
    ]),
    format,
  )
}
