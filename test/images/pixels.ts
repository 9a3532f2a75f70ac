// Helpers for the image suites: build inputs with sharp, decode outputs back to RGB, and read BMP
// files by the format's own rules (sharp cannot read BMP).
import { inflateSync } from 'node:zlib'
import sharp from 'sharp'
import type { Rgb } from '../../src/images/profiles.js'

export type Raw = { data: Buffer; width: number; height: number }

/** A PNG of one solid colour. */
export function solidPng(width: number, height: number, [r, g, b]: Rgb): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r, g, b } } })
    .png()
    .toBuffer()
}

/** A PNG from a per-pixel function. */
export function drawnPng(width: number, height: number, colourAt: (x: number, y: number) => Rgb): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = colourAt(x, y)
      const i = (y * width + x) * 3
      raw[i] = r
      raw[i + 1] = g
      raw[i + 2] = b
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer()
}

/** Decode any image sharp reads to packed 8-bit RGB. */
export async function decodeRgb(image: Buffer): Promise<Raw> {
  const { data, info } = await sharp(image).toColourspace('srgb').removeAlpha().raw().toBuffer({ resolveWithObject: true })
  if (info.channels !== 3) throw new Error(`decoded to ${info.channels} channels`)
  return { data, width: info.width, height: info.height }
}

export const key = (r: number, g: number, b: number) => (r << 16) | (g << 8) | b

/** How many pixels of each colour (keyed r<<16|g<<8|b). */
export function histogram(raw: Raw): Map<number, number> {
  const counts = new Map<number, number>()
  for (let i = 0; i < raw.data.length; i += 3) {
    const k = key(raw.data[i]!, raw.data[i + 1]!, raw.data[i + 2]!)
    counts.set(k, (counts.get(k) ?? 0) + 1)
  }
  return counts
}

export function pixel(raw: Raw, x: number, y: number): [number, number, number] {
  const i = (y * raw.width + x) * 3
  return [raw.data[i]!, raw.data[i + 1]!, raw.data[i + 2]!]
}

export type BmpInfo = {
  signature: string
  fileSize: number
  pixelOffset: number
  headerSize: number
  width: number
  height: number
  planes: number
  bitCount: number
  compression: number
  imageSize: number
  coloursUsed: number
  table: Rgb[]
}

/** The BITMAPFILEHEADER and BITMAPINFOHEADER fields, read at their fixed offsets. */
export function readBmpHeader(bmp: Buffer): BmpInfo {
  const bitCount = bmp.readUInt16LE(28)
  const coloursUsed = bmp.readUInt32LE(46)
  const entries = coloursUsed || 1 << bitCount
  const table: Rgb[] = []
  for (let i = 0; i < entries; i++) {
    const o = 54 + i * 4
    table.push([bmp[o + 2]!, bmp[o + 1]!, bmp[o]!])
  }
  return {
    signature: bmp.toString('ascii', 0, 2),
    fileSize: bmp.readUInt32LE(2),
    pixelOffset: bmp.readUInt32LE(10),
    headerSize: bmp.readUInt32LE(14),
    width: bmp.readInt32LE(18),
    height: bmp.readInt32LE(22),
    planes: bmp.readUInt16LE(26),
    bitCount,
    compression: bmp.readUInt32LE(30),
    imageSize: bmp.readUInt32LE(34),
    coloursUsed,
    table,
  }
}

/** Decode an uncompressed bottom-up indexed BMP (1/4/8 bit) to RGB, following the format spec. */
export function decodeIndexedBmp(bmp: Buffer): Raw {
  const h = readBmpHeader(bmp)
  const rowBytes = Math.floor((h.width * h.bitCount + 31) / 32) * 4
  const data = Buffer.alloc(h.width * h.height * 3)
  for (let y = 0; y < h.height; y++) {
    const row = h.pixelOffset + (h.height - 1 - y) * rowBytes
    for (let x = 0; x < h.width; x++) {
      const bitPos = x * h.bitCount
      const byte = bmp[row + (bitPos >> 3)]!
      const index = (byte >> (8 - h.bitCount - (bitPos & 7))) & ((1 << h.bitCount) - 1)
      const [r, g, b] = h.table[index]!
      data.set([r, g, b], (y * h.width + x) * 3)
    }
  }
  return { data, width: h.width, height: h.height }
}

/** IHDR bit depth and colour type of a PNG. */
export function pngHeader(png: Buffer): { width: number; height: number; bitDepth: number; colourType: number } {
  if (png.toString('latin1', 12, 16) !== 'IHDR') throw new Error('IHDR is not the first chunk')
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20), bitDepth: png[24]!, colourType: png[25]! }
}

export type Indexed = { width: number; height: number; bitDepth: number; palette: Rgb[]; indices: Uint8Array }

/**
 * The palette indices of an indexed PNG (colour type 3) as stored, not the colours they stand for:
 * what firmware that reads the index (the panel's own colour code) gets. Follows the PNG spec for
 * chunks and bit packing; only filter type 0 (None), which is what our encoder writes.
 */
export function decodePngIndices(png: Buffer): Indexed {
  let offset = 8
  let width = 0
  let height = 0
  let bitDepth = 0
  const palette: Rgb[] = []
  const idat: Buffer[] = []
  while (offset < png.length) {
    const length = png.readUInt32BE(offset)
    const type = png.toString('latin1', offset + 4, offset + 8)
    const data = png.subarray(offset + 8, offset + 8 + length)
    if (type === 'IHDR') {
      width = data.readUInt32BE(0)
      height = data.readUInt32BE(4)
      bitDepth = data[8]!
      if (data[9] !== 3) throw new Error(`colour type ${data[9]}, not indexed`)
    } else if (type === 'PLTE') {
      for (let i = 0; i < data.length; i += 3) palette.push([data[i]!, data[i + 1]!, data[i + 2]!])
    } else if (type === 'IDAT') {
      idat.push(data)
    }
    offset += 12 + length
  }
  const raw = inflateSync(Buffer.concat(idat))
  const stride = Math.ceil((width * bitDepth) / 8) + 1
  const indices = new Uint8Array(width * height)
  for (let y = 0; y < height; y++) {
    if (raw[y * stride] !== 0) throw new Error(`row ${y}: filter type ${raw[y * stride]}`)
    for (let x = 0; x < width; x++) {
      const bit = x * bitDepth
      const byte = raw[y * stride + 1 + (bit >> 3)]!
      indices[y * width + x] = (byte >> (8 - bitDepth - (bit & 7))) & ((1 << bitDepth) - 1)
    }
  }
  return { width, height, bitDepth, palette, indices }
}

/** The colour-table indices of an uncompressed bottom-up indexed BMP, top row first. */
export function decodeBmpIndices(bmp: Buffer): Indexed {
  const h = readBmpHeader(bmp)
  const rowBytes = Math.floor((h.width * h.bitCount + 31) / 32) * 4
  const indices = new Uint8Array(h.width * h.height)
  for (let y = 0; y < h.height; y++) {
    const row = h.pixelOffset + (h.height - 1 - y) * rowBytes
    for (let x = 0; x < h.width; x++) {
      const bit = x * h.bitCount
      indices[y * h.width + x] = (bmp[row + (bit >> 3)]! >> (8 - h.bitCount - (bit & 7))) & ((1 << h.bitCount) - 1)
    }
  }
  return { width: h.width, height: h.height, bitDepth: h.bitCount, palette: h.table, indices }
}

/**
 * Share of 2×2 windows that are a checkerboard (a b / b a with a ≠ b): the texture Floyd–Steinberg
 * gives a flat 50 % grey. Random pixels give 1/8; a perfect checkerboard 1.
 */
export function checkerboardShare(indices: Uint8Array, width: number, height: number): number {
  let boards = 0
  let windows = 0
  for (let y = 0; y + 1 < height; y++) {
    for (let x = 0; x + 1 < width; x++) {
      const a = indices[y * width + x]
      const b = indices[y * width + x + 1]
      windows++
      if (a !== b && indices[(y + 1) * width + x] === b && indices[(y + 1) * width + x + 1] === a) boards++
    }
  }
  return boards / windows
}
