// Our indexed PNG and BMP writers: bit depth chosen from the palette size, rows packed MSB first
// with odd widths, PNGs that libpng (through sharp) decodes to exactly palette[index] per pixel,
// BMPs with the documented header, 4-byte row padding and bottom-up rows.
import { randomBytes } from 'node:crypto'
import zlib from 'node:zlib'
import t from 'tap'
import { bmpBitDepthFor, encodeIndexedBmp } from '../../src/images/bmp.js'
import { encodeIndexedPng, pngBitDepthFor, tableCrc32 } from '../../src/images/png.js'
import type { Rgb } from '../../src/images/profiles.js'
import { decodeIndexedBmp, decodeRgb, pngHeader, readBmpHeader } from './pixels.js'

/** `n` distinct colours. */
function palette(n: number): Rgb[] {
  return Array.from({ length: n }, (_, i) => [(i * 37) & 255, (i * 101 + 7) & 255, 255 - i] as Rgb)
}

function randomIndices(count: number, colours: number): Uint8Array {
  const bytes = randomBytes(count)
  return Uint8Array.from(bytes, (b) => b % colours)
}

function expectedRgb(indices: Uint8Array, pal: readonly Rgb[]): Buffer {
  const out = Buffer.alloc(indices.length * 3)
  for (let p = 0; p < indices.length; p++) out.set(pal[indices[p]!]!, p * 3)
  return out
}

t.test('PNG: bit depth follows palette size and pixels decode exactly', async (t) => {
  const depths: Array<[number, number]> = [
    [2, 1],
    [3, 2],
    [4, 2],
    [5, 4],
    [16, 4],
    [17, 8],
    [256, 8],
  ]
  for (const [colours, depth] of depths) {
    t.equal(pngBitDepthFor(colours), depth, `${colours} colours → ${depth} bits`)
    for (const [w, h] of [
      [13, 7],
      [1, 1],
      [9, 3],
      [64, 2],
    ] as const) {
      const pal = palette(colours)
      const indices = randomIndices(w * h, colours)
      const png = encodeIndexedPng(indices, w, h, pal)
      const ihdr = pngHeader(png)
      t.same(ihdr, { width: w, height: h, bitDepth: depth, colourType: 3 }, `${colours} colours ${w}×${h}: IHDR`)
      const decoded = await decodeRgb(png)
      t.ok(decoded.data.equals(expectedRgb(indices, pal)), `${colours} colours ${w}×${h}: every pixel is palette[index]`)
    }
  }
  t.throws(() => pngBitDepthFor(257), RangeError)
  t.throws(() => encodeIndexedPng(new Uint8Array(5), 2, 2, palette(2)), RangeError, 'index count must match the size')
})

t.test('PNG: chunk CRCs are the standard CRC-32', async (t) => {
  t.equal(tableCrc32(Buffer.from('123456789')), 0xcbf43926, 'check value of CRC-32/ISO-HDLC')
  const data = randomBytes(4096)
  t.equal(tableCrc32(data), zlib.crc32(data) >>> 0, 'table fallback matches zlib')
  const png = encodeIndexedPng(new Uint8Array([0, 1, 1, 0]), 2, 2, palette(2))
  // Walk the chunks and verify each CRC over type + data.
  const types: string[] = []
  for (let o = 8; o < png.length; ) {
    const len = png.readUInt32BE(o)
    const type = png.toString('latin1', o + 4, o + 8)
    types.push(type)
    t.equal(png.readUInt32BE(o + 8 + len), tableCrc32(png.subarray(o + 4, o + 8 + len)), `${type} CRC`)
    o += 12 + len
  }
  t.same(types, ['IHDR', 'PLTE', 'IDAT', 'IEND'])
})

t.test('BMP: sizes, header, padding and pixels', async (t) => {
  t.equal(bmpBitDepthFor(2), 1)
  t.equal(bmpBitDepthFor(4), 4)
  t.equal(bmpBitDepthFor(16), 4)
  t.equal(bmpBitDepthFor(17), 8)

  const exact = encodeIndexedBmp(new Uint8Array(800 * 480), 800, 480, palette(2), 1)
  t.equal(exact.length, 48_062, '800×480 at 1 bit is 48,062 bytes')

  const cases: Array<[number, 1 | 4 | 8, number]> = [
    // colours, bits, bytes per row for width 13 (rounded up to 4)
    [2, 1, 4],
    [7, 4, 8],
    [200, 8, 16],
  ]
  for (const [colours, bits, rowBytes] of cases) {
    const w = 13
    const h = 5
    const pal = palette(colours)
    const indices = randomIndices(w * h, colours)
    const bmp = encodeIndexedBmp(indices, w, h, pal)
    const head = readBmpHeader(bmp)
    const offset = 54 + 4 * colours
    t.equal(head.bitCount, bits, `${colours} colours: ${bits} bits`)
    t.equal(head.pixelOffset, offset, `${colours} colours: pixel offset after a ${colours}-entry table`)
    t.equal(bmp.length, offset + rowBytes * h, `${colours} colours: length`)
    t.equal(head.fileSize, bmp.length, `${colours} colours: file size field`)
    t.equal(head.imageSize, rowBytes * h)
    t.equal(head.coloursUsed, colours)
    t.same(head.table, pal, `${colours} colours: colour table (stored BGR0)`)
    t.ok(decodeIndexedBmp(bmp).data.equals(expectedRgb(indices, pal)), `${colours} colours: pixels (bottom-up rows)`)
    // Bytes past the last pixel of each row are zero padding.
    const usedBytes = Math.ceil((w * bits) / 8)
    let dirty = 0
    for (let y = 0; y < h; y++) for (let b = usedBytes; b < rowBytes; b++) dirty += bmp[offset + y * rowBytes + b]!
    t.equal(dirty, 0, `${colours} colours: row padding is zero`)
  }

  // The first stored row is the bottom of the image.
  const topBlack = new Uint8Array(8 * 2)
  topBlack.fill(1, 8) // row 0 black (index 0), row 1 white (index 1)
  const bmp = encodeIndexedBmp(topBlack, 8, 2, [
    [0, 0, 0],
    [255, 255, 255],
  ])
  t.equal(bmp[62], 0xff, 'first stored row is the bottom (white) row')
  t.equal(bmp[66], 0x00, 'second stored row is the top (black) row')

  t.throws(() => encodeIndexedBmp(new Uint8Array(4), 2, 2, palette(3), 1), RangeError, '3 colours do not fit 1 bit')
})
