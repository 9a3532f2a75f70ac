// A small picture of the image in the terminal: sharp scales it to ~40 columns; colour
// terminals get Unicode upper half blocks (two pixels per cell, foreground above, background
// below, 24-bit colour), anything else a plain ASCII brightness ramp.
import sharp from 'sharp'

export type PreviewOptions = { columns?: number; color?: boolean }

type Raw = { data: Buffer; width: number; height: number; channels: 3 }

/**
 * Decodes an uncompressed BMP (BITMAPINFOHEADER or later, 1/4/8/24/32 bit) to RGB. sharp's
 * prebuilt libvips has no BMP reader, and 1-bit BMP is what black-and-white panels are sent.
 */
export function decodeBmp(buf: Buffer): Raw {
  if (buf.length < 54 || buf.toString('latin1', 0, 2) !== 'BM') throw new Error('not a BMP file')
  const pixelOffset = buf.readUInt32LE(10)
  const headerSize = buf.readUInt32LE(14)
  const width = buf.readInt32LE(18)
  const rawHeight = buf.readInt32LE(22)
  const bits = buf.readUInt16LE(28)
  const compression = buf.readUInt32LE(30)
  if (compression !== 0 && !(compression === 3 && bits === 32)) throw new Error(`BMP compression ${compression} is not supported`)
  if (![1, 4, 8, 24, 32].includes(bits)) throw new Error(`BMP with ${bits} bits per pixel is not supported`)
  const height = Math.abs(rawHeight)
  if (width <= 0 || height === 0 || width * height > 64_000_000) throw new Error('BMP size out of range')
  const topDown = rawHeight < 0
  const palette: Array<[number, number, number]> = []
  if (bits <= 8) {
    const used = buf.readUInt32LE(46) || 1 << bits
    const table = 14 + headerSize
    for (let i = 0; i < used; i++) palette.push([buf[table + i * 4 + 2]!, buf[table + i * 4 + 1]!, buf[table + i * 4]!])
  }
  const rowBytes = Math.ceil((width * bits) / 32) * 4
  if (pixelOffset + rowBytes * height > buf.length) throw new Error('BMP is truncated')
  const out = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    const row = pixelOffset + (topDown ? y : height - 1 - y) * rowBytes
    for (let x = 0; x < width; x++) {
      let rgb: readonly number[]
      if (bits === 24 || bits === 32) {
        const p = row + x * (bits / 8)
        rgb = [buf[p + 2]!, buf[p + 1]!, buf[p]!]
      } else {
        const bitPos = x * bits
        const byte = buf[row + (bitPos >> 3)]!
        const index = (byte >> (8 - bits - (bitPos & 7))) & ((1 << bits) - 1)
        rgb = palette[index] ?? [0, 0, 0]
      }
      const o = (y * width + x) * 3
      out[o] = rgb[0]!
      out[o + 1] = rgb[1]!
      out[o + 2] = rgb[2]!
    }
  }
  return { data: out, width, height, channels: 3 }
}

const RAMP = ' .:-=+*#%@'

/** Renders `image` (PNG, JPEG, WebP or BMP bytes) as terminal text, one line per row. */
export async function renderPreview(image: Buffer, opts: PreviewOptions = {}): Promise<string> {
  const columns = Math.max(8, Math.min(200, opts.columns ?? 40))
  const input =
    image.toString('latin1', 0, 2) === 'BM'
      ? (() => {
          const raw = decodeBmp(image)
          return sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: raw.channels } })
        })()
      : sharp(image)
  const meta = await input.clone().metadata()
  const aspect = (meta.height ?? 1) / (meta.width ?? 1)
  // A character cell is about twice as tall as wide: half blocks give two pixel rows per line.
  const rows = opts.color ? Math.max(2, Math.round(columns * aspect)) : Math.max(1, Math.round((columns * aspect) / 2))
  const { data, info } = await input
    .flatten({ background: '#ffffff' })
    .resize(columns, rows + (opts.color && rows % 2 ? 1 : 0), { fit: 'fill', kernel: 'lanczos3' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true })
  const px = (x: number, y: number) => {
    const o = (y * info.width + x) * info.channels
    return [data[o]!, data[o + 1]!, data[o + 2]!] as const
  }
  const lines: string[] = []
  if (opts.color) {
    for (let y = 0; y + 1 < info.height; y += 2) {
      let line = ''
      for (let x = 0; x < info.width; x++) {
        const [r1, g1, b1] = px(x, y)
        const [r2, g2, b2] = px(x, y + 1)
        line += `\x1b[38;2;${r1};${g1};${b1}m\x1b[48;2;${r2};${g2};${b2}m▀`
      }
      lines.push(`${line}\x1b[0m`)
    }
  } else {
    for (let y = 0; y < info.height; y++) {
      let line = ''
      for (let x = 0; x < info.width; x++) {
        const [r, g, b] = px(x, y)
        // Dark pixels get dense characters: the ramp reads as ink on paper.
        const luma = (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255
        line += RAMP[Math.min(RAMP.length - 1, Math.floor((1 - luma) * RAMP.length))]
      }
      lines.push(line.replace(/\s+$/, ''))
    }
  }
  return lines.join('\n')
}
