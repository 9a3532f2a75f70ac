// BMP3 (BITMAPFILEHEADER + BITMAPINFOHEADER) writer for indexed images. sharp cannot write BMP,
// and e-paper firmware commonly wants exactly this layout: bottom-up rows, each padded to 4 bytes,
// a colour table of BGR0 entries, no compression. For 1 bit at 800×480 that is
// 14 + 40 + 2·4 + 480·100 = 48,062 bytes.
import type { Rgb } from './profiles.js'

export type BmpBitDepth = 1 | 4 | 8

const FILE_HEADER = 14
const INFO_HEADER = 40
// 72 dpi; readers ignore it, but zero upsets a few picky decoders.
const PIXELS_PER_METRE = 2835

/** Smallest BMP bit depth (1, 4 or 8) that can index `colours` entries. */
export function bmpBitDepthFor(colours: number): BmpBitDepth {
  if (colours <= 2) return 1
  if (colours <= 16) return 4
  if (colours <= 256) return 8
  throw new RangeError(`a BMP colour table holds at most 256 colours, got ${colours}`)
}

/**
 * Encode `indices` (one palette index per pixel, row-major, top row first) as an uncompressed
 * indexed BMP. The colour table has exactly `palette.length` entries.
 */
export function encodeIndexedBmp(
  indices: Uint8Array,
  width: number,
  height: number,
  palette: readonly Rgb[],
  bitDepth: BmpBitDepth = bmpBitDepthFor(palette.length),
): Buffer {
  if (indices.length !== width * height) throw new RangeError(`expected ${width * height} indices, got ${indices.length}`)
  if (palette.length > 1 << bitDepth) throw new RangeError(`${palette.length} colours do not fit in ${bitDepth} bits`)

  const rowBytes = Math.ceil((width * bitDepth) / 32) * 4
  const tableBytes = palette.length * 4
  const pixelOffset = FILE_HEADER + INFO_HEADER + tableBytes
  const imageBytes = rowBytes * height
  const fileSize = pixelOffset + imageBytes
  // alloc (zeroed) so row padding and unused low bits are 0.
  const buf = Buffer.alloc(fileSize)

  buf.write('BM', 0, 'ascii')
  buf.writeUInt32LE(fileSize, 2)
  buf.writeUInt32LE(0, 6) // reserved
  buf.writeUInt32LE(pixelOffset, 10)

  buf.writeUInt32LE(INFO_HEADER, 14)
  buf.writeInt32LE(width, 18)
  buf.writeInt32LE(height, 22) // positive: rows stored bottom-up
  buf.writeUInt16LE(1, 26) // planes
  buf.writeUInt16LE(bitDepth, 28)
  buf.writeUInt32LE(0, 30) // BI_RGB, no compression
  buf.writeUInt32LE(imageBytes, 34)
  buf.writeInt32LE(PIXELS_PER_METRE, 38)
  buf.writeInt32LE(PIXELS_PER_METRE, 42)
  buf.writeUInt32LE(palette.length, 46) // colours used
  buf.writeUInt32LE(0, 50) // all colours important

  let t = FILE_HEADER + INFO_HEADER
  for (const [r, g, b] of palette) {
    buf[t++] = b
    buf[t++] = g
    buf[t++] = r
    buf[t++] = 0
  }

  for (let y = 0; y < height; y++) {
    const src = y * width
    const dst = pixelOffset + (height - 1 - y) * rowBytes
    if (bitDepth === 8) {
      buf.set(indices.subarray(src, src + width), dst)
    } else if (bitDepth === 4) {
      for (let x = 0; x < width; x += 2) {
        const hi = indices[src + x]! & 0x0f
        const lo = x + 1 < width ? indices[src + x + 1]! & 0x0f : 0
        buf[dst + (x >> 1)] = (hi << 4) | lo
      }
    } else {
      // 1 bit: leftmost pixel in the most significant bit.
      let x = 0
      let o = dst
      for (; x + 8 <= width; x += 8) {
        const s = src + x
        buf[o++] =
          ((indices[s]! & 1) << 7) |
          ((indices[s + 1]! & 1) << 6) |
          ((indices[s + 2]! & 1) << 5) |
          ((indices[s + 3]! & 1) << 4) |
          ((indices[s + 4]! & 1) << 3) |
          ((indices[s + 5]! & 1) << 2) |
          ((indices[s + 6]! & 1) << 1) |
          (indices[s + 7]! & 1)
      }
      if (x < width) {
        let byte = 0
        for (let bit = 7; x < width; x++, bit--) byte |= (indices[src + x]! & 1) << bit
        buf[o] = byte
      }
    }
  }
  return buf
}
