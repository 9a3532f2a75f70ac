// The screens the service draws itself for a TRMNL device, as the 1-bit BMP the original firmware
// shows: the pairing screen (the code in large type and a QR code of the pairing link, for
// firmware older than the pairing screen it paints itself) and "paired, nothing sent yet".
import { encodeVariant, renderForDisplay } from '../images/convert.js'
import { loadSharp } from '../images/sharp.js'
import type { DisplayProfile } from '../images/profiles.js'

const escapeXml = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`)

async function svgScreen(profile: DisplayProfile, lines: Array<{ text: string; size: number }>, qr?: string): Promise<Buffer> {
  const { width, height } = profile
  const qrSide = qr ? Math.round(Math.min(width, height) * 0.45) : 0
  const qrSvg = qr ? await (await import('qrcode')).default.toString(qr, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' }) : ''
  const textWidth = width - qrSide
  let y = Math.round(height * 0.3)
  const texts = lines.map((l) => {
    const t = `<text x="${Math.round(textWidth / 2)}" y="${y}" font-family="DejaVu Sans, sans-serif" font-size="${l.size}" font-weight="bold" text-anchor="middle">${escapeXml(l.text)}</text>`
    y += Math.round(l.size * 1.4)
    return t
  })
  const qrImage = qr
    ? `<image x="${width - qrSide - Math.round(width * 0.03)}" y="${Math.round((height - qrSide) / 2)}" width="${qrSide}" height="${qrSide}" href="data:image/svg+xml;base64,${Buffer.from(qrSvg).toString('base64')}"/>`
    : ''
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#fff"/>${texts.join('')}${qrImage}</svg>`
  return (await loadSharp())(Buffer.from(svg)).png().toBuffer()
}

/** A screen as the device's BMP. */
async function bmp(profile: DisplayProfile, png: Buffer): Promise<Buffer> {
  return (await encodeVariant(await renderForDisplay(png, { ...profile, fit: 'contain' }), 'bmp1')).data
}

export async function setupScreen(profile: DisplayProfile, pinCode: string, pairUrl: string): Promise<Buffer> {
  const big = Math.round(profile.height / 6)
  return bmp(
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
  )
}

export async function pairedScreen(profile: DisplayProfile, name: string): Promise<Buffer> {
  const size = Math.round(profile.height / 10)
  return bmp(
    profile,
    await svgScreen(profile, [
      { text: name.slice(0, 40), size },
      { text: 'Paired. Send it a picture from the app.', size: Math.round(size / 2) },
    ]),
  )
}

/** What identify shows: the frame's name, large, so its owner can tell which one it is. */
export async function identifyScreen(profile: DisplayProfile, name: string): Promise<Buffer> {
  const size = Math.round(profile.height / 6)
  return bmp(
    profile,
    await svgScreen(profile, [
      { text: 'This is', size: Math.round(size / 2) },
      { text: name.slice(0, 30), size },
    ]),
  )
}
