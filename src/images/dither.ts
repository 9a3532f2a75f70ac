// Dithering of packed 8-bit RGB pixels to a display's fixed inks: Floyd–Steinberg, Atkinson or
// blue-noise ordered dithering, chosen per display profile (DisplayProfile.dither).
//
// Choices, and why (colour panels: see dither-colour.ts):
// - Grey palettes (every entry has r = g = b: bw, gray4) are dithered on one channel, Rec. 601 luma
//   of the sRGB (gamma-encoded) values, with a 256-entry nearest-level table, several times faster
//   than the colour path. Diffusing in sRGB rather than linear light is deliberate: image files
//   encode tone that way, and mid-grey RGB(128,128,128) comes out ~50% black, where linear-light
//   diffusion would print it ~78% black and the picture would look much darker on paper.
// - The target value (pixel + incoming error) is clamped to 0..255 before choosing, so tones a
//   palette cannot reach do not pile up unbounded error.
// - Error diffusion scans rows serpentine (left→right, then right→left), which avoids the diagonal
//   "worm" artefacts of always scanning one way. Error is kept in integers (scaled by 16 for
//   Floyd–Steinberg's 7, 3, 5, 1 / 16, by 8 for Atkinson's 1/8) in Int16 rows with margins, so the
//   inner loop has no bounds checks, no division and no allocation.
// - Floyd–Steinberg turns a flat 50% grey into an almost perfect checkerboard, which 1-bit e-paper
//   shows as a coarse texture; Atkinson passes on only 6/8 of the error (crisper, a little more
//   contrast, lighter lights and darker darks), and blue noise compares each pixel with a
//   void-and-cluster threshold map (blue-noise.ts): exact tone, no pattern, no error to carry.
import { blueNoiseRanks, BLUE_NOISE_SIZE, TILE_MASK } from './blue-noise.js'
import { blueNoiseColour, diffuseColour } from './dither-colour.js'
import type { PixelSource } from './lab.js'
import type { DitherMethod, Rgb } from './profiles.js'

export type { PixelSource }

/** True when every palette entry is a grey, so the one-channel path applies. */
export function isGreyPalette(palette: readonly Rgb[]): boolean {
  return palette.every(([r, g, b]) => r === g && g === b)
}

/**
 * Dither `rgb` (width × height × 3 bytes, row-major, no padding) to `palette` with `method` and
 * return one palette index per pixel (an index into `palette`, not a device code).
 */
export function ditherToPalette(
  rgb: PixelSource,
  width: number,
  height: number,
  palette: readonly Rgb[],
  method: DitherMethod = 'floyd-steinberg',
): Uint8Array {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`invalid image size ${width}×${height}`)
  }
  if (rgb.length < width * height * 3) {
    throw new RangeError(`pixel buffer holds ${rgb.length} bytes, ${width}×${height} RGB needs ${width * height * 3}`)
  }
  if (palette.length < 1 || palette.length > 256) throw new RangeError('palette must have 1..256 colours')
  if (isGreyPalette(palette)) {
    if (method === 'blue-noise') return blueNoiseGrey(rgb, width, height, palette)
    return method === 'atkinson' ? atkinsonGrey(rgb, width, height, palette) : ditherGrey(rgb, width, height, palette)
  }
  if (method === 'blue-noise') return blueNoiseColour(rgb, width, height, palette)
  return diffuseColour(rgb, width, height, palette, method)
}

/** Rec. 601 luma of pixel p (byte offset) in 8.8 fixed point, rounded. */
const luma = (rgb: PixelSource, p: number) => (rgb[p]! * 77 + rgb[p + 1]! * 150 + rgb[p + 2]! * 29 + 128) >> 8

/** The grey palette's levels, and for every 8-bit level the index of the nearest one. */
function greyLevels(palette: readonly Rgb[]): { level: Int16Array; nearest: Uint8Array } {
  const level = new Int16Array(palette.length)
  for (let i = 0; i < palette.length; i++) level[i] = palette[i]![0]
  const nearest = new Uint8Array(256)
  for (let v = 0; v < 256; v++) {
    let best = 0
    let bestD = Infinity
    for (let i = 0; i < level.length; i++) {
      const d = Math.abs(v - level[i]!)
      if (d < bestD) {
        bestD = d
        best = i
      }
    }
    nearest[v] = best
  }
  return { level, nearest }
}

/** Floyd–Steinberg on luma. */
function ditherGrey(rgb: PixelSource, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  const { level, nearest } = greyLevels(palette)

  const out = new Uint8Array(width * height)
  // Error rows with one cell of margin on each side: cell x + 1 holds pixel x.
  let cur = new Int16Array(width + 2)
  let next = new Int16Array(width + 2)
  for (let y = 0; y < height; y++) {
    const rowStart = y * width
    const ltr = (y & 1) === 0
    const step = ltr ? 1 : -1
    let x = ltr ? 0 : width - 1
    const end = ltr ? width : -1
    for (; x !== end; x += step) {
      const p = (rowStart + x) * 3
      // Luma plus the diffused error (scaled by 16, rounded).
      let v = luma(rgb, p) + ((cur[x + 1]! + 8) >> 4)
      if (v < 0) v = 0
      else if (v > 255) v = 255
      const idx = nearest[v]!
      out[rowStart + x] = idx
      const e = v - level[idx]!
      if (e !== 0) {
        const c = x + 1
        cur[c + step]! += e * 7
        next[c - step]! += e * 3
        next[c]! += e * 5
        next[c + step]! += e
      }
    }
    const t = cur
    cur = next
    next = t
    next.fill(0)
  }
  return out
}

/** Atkinson on luma: 1/8 of the error to each of (x+1, y), (x+2, y), (x−1, y+1), (x, y+1), (x+1, y+1), (x, y+2). */
function atkinsonGrey(rgb: PixelSource, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  const { level, nearest } = greyLevels(palette)
  const out = new Uint8Array(width * height)
  // Three error rows (this one and the next two), two cells of margin either side: cell x + 2 holds pixel x.
  let e0 = new Int16Array(width + 4)
  let e1 = new Int16Array(width + 4)
  let e2 = new Int16Array(width + 4)
  for (let y = 0; y < height; y++) {
    const rowStart = y * width
    const ltr = (y & 1) === 0
    const step = ltr ? 1 : -1
    const end = ltr ? width : -1
    for (let x = ltr ? 0 : width - 1; x !== end; x += step) {
      const c = x + 2
      // Error is kept unscaled; each neighbour's share is an eighth, rounded when read.
      let v = luma(rgb, (rowStart + x) * 3) + ((e0[c]! + 4) >> 3)
      if (v < 0) v = 0
      else if (v > 255) v = 255
      const idx = nearest[v]!
      out[rowStart + x] = idx
      const e = v - level[idx]!
      if (e !== 0) {
        e0[c + step]! += e
        e0[c + 2 * step]! += e
        e1[c - step]! += e
        e1[c]! += e
        e1[c + step]! += e
        e2[c]! += e
      }
    }
    const t = e0
    e0 = e1
    e1 = e2
    e2 = t
    e2.fill(0)
  }
  return out
}

/**
 * Ordered dithering on luma with the blue-noise map: between the two palette levels around a
 * pixel's value, the lighter one wherever the map's rank is at or above the share of the darker,
 * so a flat area gets exactly its tone as a scatter of lighter dots. Low ranks go dark first.
 */
function blueNoiseGrey(rgb: PixelSource, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  const ranks = blueNoiseRanks()
  const cells = BLUE_NOISE_SIZE * BLUE_NOISE_SIZE
  // For every 8-bit value: the levels below and above it, and the rank from which the upper one is used.
  const sorted = [...palette.keys()].sort((a, b) => palette[a]![0] - palette[b]![0] || a - b)
  const pick = new Uint8Array(512) // [2v] the level below v, [2v + 1] the level above
  const from = new Int32Array(256)
  for (let v = 0; v < 256; v++) {
    let k = 0
    while (k + 1 < sorted.length && palette[sorted[k + 1]!]![0] <= v) k++
    const lo = sorted[k]!
    const hi = sorted[Math.min(k + 1, sorted.length - 1)]!
    pick[2 * v] = lo
    pick[2 * v + 1] = hi
    const span = palette[hi]![0] - palette[lo]![0]
    // Share of the upper level = (v − lo) / span; it takes the top `share · cells` ranks.
    from[v] = span > 0 && v > palette[lo]![0] ? Math.round(cells * (1 - (v - palette[lo]![0]) / span)) : cells
  }
  const out = new Uint8Array(width * height)
  // Imported bindings can be getters (tsx runs this as CommonJS): copied into locals for the loop.
  const side = BLUE_NOISE_SIZE
  const mask = TILE_MASK
  for (let y = 0; y < height; y++) {
    const rankRow = (y & mask) * side
    for (let x = 0, i = y * width; x < width; x++, i++) {
      const v = luma(rgb, i * 3)
      // 1 when rank ≥ from[v], without a branch: the comparison is as good as random, a branch
      // on it would be mispredicted half the time in mid-tones.
      const up = (from[v]! - 1 - ranks[rankRow + (x & mask)]!) >>> 31
      out[i] = pick[2 * v + up]!
    }
  }
  return out
}
