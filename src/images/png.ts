// Indexed-colour PNG encoder (colour type 3) for already-quantised pixels. sharp's palette PNG
// runs its own adaptive quantiser, so it cannot be told "use exactly these colours"; we write the
// file ourselves: IHDR, PLTE with exactly the palette, one IDAT (zlib), IEND.
import zlib from 'node:zlib'
import type { Rgb } from './profiles.js'

export type PngBitDepth = 1 | 2 | 4 | 8

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** Smallest PNG bit depth that can index `colours` palette entries. */
export function pngBitDepthFor(colours: number): PngBitDepth {
  if (colours <= 2) return 1
  if (colours <= 4) return 2
  if (colours <= 16) return 4
  if (colours <= 256) return 8
  throw new RangeError(`a PNG palette holds at most 256 colours, got ${colours}`)
}

/**
 * Encode `indices` (one palette index per pixel, row-major, top row first) as a colour-type-3
 * PNG at the smallest bit depth the palette allows.
 */
export function encodeIndexedPng(indices: Uint8Array, width: number, height: number, palette: readonly Rgb[]): Buffer {
  if (indices.length !== width * height) throw new RangeError(`expected ${width * height} indices, got ${indices.length}`)
  if (palette.length < 1) throw new RangeError('palette is empty')
  const depth = pngBitDepthFor(palette.length)

  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = depth
  ihdr[9] = 3 // indexed colour
  ihdr[10] = 0 // deflate
  ihdr[11] = 0 // adaptive filtering method (we use filter type None on every row)
  ihdr[12] = 0 // no interlace

  const plte = Buffer.alloc(palette.length * 3)
  palette.forEach(([r, g, b], i) => {
    plte[i * 3] = r
    plte[i * 3 + 1] = g
    plte[i * 3 + 2] = b
  })

  // Filter type None for every row: the PNG spec recommends it for palette images, and dithered
  // pixels give the predictive filters nothing to work with. Level 4, not zlib's default 6: on the
  // display benchmark's 800×480 image, 6 takes 10 ms for the Spectra 6 file and 4 takes 3 ms for
  // 2.7 % more bytes (4-grey: 4.9 → 2.0 ms, +1.5 %; 1 bit: 0.9 → 0.7 ms, +1 %); dithered data
  // gains little from 6's longer match search.
  const idat = zlib.deflateSync(packRows(indices, width, height, depth), { level: 4, memLevel: 9 })

  return Buffer.concat([SIGNATURE, chunk('IHDR', ihdr), chunk('PLTE', plte), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))])
}

/**
 * Encode grey levels (0 … 2^depth − 1 per pixel, 0 black, row-major, top row first) as a
 * colour-type-0 (greyscale) PNG of that bit depth: no palette, so every decoder (TRMNL's firmware
 * among them, which inverts some 1-bit palette files) reads the levels as they are.
 */
export function encodeGrayPng(levels: Uint8Array, width: number, height: number, depth: 1 | 2 | 4 | 8): Buffer {
  if (levels.length !== width * height) throw new RangeError(`expected ${width * height} levels, got ${levels.length}`)
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = depth
  ihdr[9] = 0 // greyscale
  const idat = zlib.deflateSync(packRows(levels, width, height, depth), { level: 4, memLevel: 9 })
  return Buffer.concat([SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0))])
}

/** Scanlines as PNG wants them before compression: a filter byte, then pixels packed MSB first. */
function packRows(indices: Uint8Array, width: number, height: number, depth: PngBitDepth): Buffer {
  const rowBytes = Math.ceil((width * depth) / 8)
  const stride = rowBytes + 1
  const out = Buffer.alloc(stride * height) // zeroed: filter byte 0 and unused trailing bits 0
  const mask = (1 << depth) - 1
  for (let y = 0; y < height; y++) {
    const src = y * width
    const dst = y * stride + 1
    if (depth === 8) {
      out.set(indices.subarray(src, src + width), dst)
      continue
    }
    let o = dst
    let acc = 0
    let bits = 0
    for (let x = 0; x < width; x++) {
      acc = (acc << depth) | (indices[src + x]! & mask)
      bits += depth
      if (bits === 8) {
        out[o++] = acc
        acc = 0
        bits = 0
      }
    }
    if (bits > 0) out[o] = acc << (8 - bits)
  }
  return out
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, 'ascii')
  data.copy(out, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length)
  return out
}

// zlib.crc32 arrived in Node 20.15; engines allows any Node 20, so keep a table fallback.
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array) => number }).crc32
let table: Uint32Array | undefined

function crc32(data: Uint8Array): number {
  if (nativeCrc32) return nativeCrc32(data) >>> 0
  return tableCrc32(data)
}

/** Reference CRC-32 (the PNG/zlib polynomial); exported so tests can check it against zlib's. */
export function tableCrc32(data: Uint8Array): number {
  if (!table) {
    table = new Uint32Array(256)
    for (let n = 0; n < 256; n++) {
      let c = n
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
      table[n] = c >>> 0
    }
  }
  let c = 0xffffffff
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]!) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
