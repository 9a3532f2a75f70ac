// Floyd–Steinberg error diffusion of packed 8-bit RGB pixels to a fixed palette.
//
// Choices, and why:
// - Error is diffused in sRGB (gamma-encoded) values, not linear light, as image files encode tone:
//   mid-grey RGB(128,128,128) comes out ~50% black, where linear-light diffusion would print it
//   ~78% black and the picture would look much darker on paper than on screen.
// - Grey palettes (every entry has r = g = b: bw, gray4) are dithered on one channel, Rec. 601 luma,
//   with a 256-entry nearest-level table, several times faster than the colour path.
// - Colour palettes pick the nearest entry by weighted squared RGB distance, 3·dr² + 4·dg² + 2·db²
//   (the eye is most sensitive to green and least to blue), a cheap stand-in for a perceptual space
//   that is good enough with six or seven far-apart colours. A per-palette cell cache (below)
//   skips the search for most pixels without changing any result.
// - The target value (pixel + incoming error) is clamped to 0..255 before choosing, so colours a
//   small palette cannot reach do not pile up unbounded error and smear across the image.
// - Rows are scanned serpentine (left→right, then right→left), which avoids the diagonal "worm"
//   artefacts of always scanning one way.
// - Error is kept in integers scaled by 16 (the FS weights are 7, 3, 5, 1 / 16) in two Int16 rows
//   with one pixel of margin either side, so the inner loop has no bounds checks, no division and
//   no allocation. Largest magnitude is 16 · 255 = 4080, well inside Int16.
import type { Rgb } from './profiles.js'

export type PixelSource = Uint8Array | Uint8ClampedArray

/** True when every palette entry is a grey, so the one-channel path applies. */
export function isGreyPalette(palette: readonly Rgb[]): boolean {
  return palette.every(([r, g, b]) => r === g && g === b)
}

/**
 * Dither `rgb` (width × height × 3 bytes, row-major, no padding) to `palette` and return one
 * palette index per pixel.
 */
export function ditherToPalette(rgb: PixelSource, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`invalid image size ${width}×${height}`)
  }
  if (rgb.length < width * height * 3) {
    throw new RangeError(`pixel buffer holds ${rgb.length} bytes, ${width}×${height} RGB needs ${width * height * 3}`)
  }
  if (palette.length < 1 || palette.length > 256) throw new RangeError('palette must have 1..256 colours')
  return isGreyPalette(palette) ? ditherGrey(rgb, width, height, palette) : ditherColour(rgb, width, height, palette)
}

function ditherGrey(rgb: PixelSource, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  // nearest[v] = index of the palette grey closest to level v; level[i] = that grey's value.
  const nearest = new Uint8Array(256)
  const level = new Int16Array(palette.length)
  for (let i = 0; i < palette.length; i++) level[i] = palette[i]![0]
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
      // Rec. 601 luma in 8.8 fixed point, then add the diffused error (scaled by 16, rounded).
      let v = ((rgb[p]! * 77 + rgb[p + 1]! * 150 + rgb[p + 2]! * 29 + 128) >> 8) + ((cur[x + 1]! + 8) >> 4)
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

// Nearest-colour cache for colour palettes. The RGB cube is cut into 64³ cells of 4×4×4 values; a
// cell whose eight corners all have the same strictly nearest palette entry lies entirely inside
// that entry's region (with a weighted squared distance, "nearer to i than to j" is a half-space,
// so each region is convex), so every pixel in it gets that entry without a search. Cells on a
// boundary are marked and searched exactly. The result is identical to a full search per pixel at
// about half the cost. Filled lazily, 256 KiB per palette, kept for the palette object's lifetime.
const CELL_UNKNOWN = 0
const CELL_MIXED = 255
const cellCaches = new WeakMap<readonly Rgb[], Uint8Array>()

function ditherColour(rgb: PixelSource, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  const n = palette.length
  const pr = new Int32Array(n)
  const pg = new Int32Array(n)
  const pb = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const [r, g, b] = palette[i]!
    pr[i] = r
    pg[i] = g
    pb[i] = b
  }
  // Cell entries hold index + 1, so palettes of up to 254 colours can use the cache.
  const useCells = n < CELL_MIXED
  let cells = cellCaches.get(palette)
  if (!cells) {
    cells = new Uint8Array(useCells ? 64 * 64 * 64 : 0)
    if (useCells) cellCaches.set(palette, cells)
  }

  /** Index of the strictly nearest entry to (r, g, b), or -1 when two entries tie. */
  const strictNearest = (r: number, g: number, b: number): number => {
    let best = -1
    let bestD = 0x7fffffff
    for (let i = 0; i < n; i++) {
      const dr = r - pr[i]!
      const dg = g - pg[i]!
      const db = b - pb[i]!
      const d = 3 * dr * dr + 4 * dg * dg + 2 * db * db
      if (d < bestD) {
        bestD = d
        best = i
      } else if (d === bestD) {
        best = -1
      }
    }
    return best
  }

  const classify = (cell: number): number => {
    const r0 = (cell >> 12) << 2
    const g0 = ((cell >> 6) & 63) << 2
    const b0 = (cell & 63) << 2
    const first = strictNearest(r0, g0, b0)
    if (first < 0) return CELL_MIXED
    for (let corner = 1; corner < 8; corner++) {
      const i = strictNearest(r0 + (corner & 4 ? 3 : 0), g0 + (corner & 2 ? 3 : 0), b0 + (corner & 1 ? 3 : 0))
      if (i !== first) return CELL_MIXED
    }
    return first + 1
  }

  const out = new Uint8Array(width * height)
  const rowLen = (width + 2) * 3
  let cur = new Int16Array(rowLen)
  let next = new Int16Array(rowLen)
  for (let y = 0; y < height; y++) {
    const rowStart = y * width
    const ltr = (y & 1) === 0
    const step = ltr ? 1 : -1
    const step3 = step * 3
    let x = ltr ? 0 : width - 1
    const end = ltr ? width : -1
    for (; x !== end; x += step) {
      const p = (rowStart + x) * 3
      const c = (x + 1) * 3
      let r = rgb[p]! + ((cur[c]! + 8) >> 4)
      let g = rgb[p + 1]! + ((cur[c + 1]! + 8) >> 4)
      let b = rgb[p + 2]! + ((cur[c + 2]! + 8) >> 4)
      r = r < 0 ? 0 : Math.min(r, 255)
      g = g < 0 ? 0 : Math.min(g, 255)
      b = b < 0 ? 0 : Math.min(b, 255)

      let best: number
      const cell = ((r >> 2) << 12) | ((g >> 2) << 6) | (b >> 2)
      let v = useCells ? cells[cell]! : CELL_MIXED
      if (v === CELL_UNKNOWN) v = cells[cell] = classify(cell)
      if (v !== CELL_MIXED) {
        best = v - 1
      } else {
        // Exact search; on a tie the lower index wins.
        best = 0
        let bestD = 0x7fffffff
        for (let i = 0; i < n; i++) {
          const dr = r - pr[i]!
          const dg = g - pg[i]!
          const db = b - pb[i]!
          const d = 3 * dr * dr + 4 * dg * dg + 2 * db * db
          if (d < bestD) {
            bestD = d
            best = i
          }
        }
      }
      out[rowStart + x] = best

      const er = r - pr[best]!
      const eg = g - pg[best]!
      const eb = b - pb[best]!
      if ((er | eg | eb) !== 0) {
        const ahead = c + step3
        const behind = c - step3
        cur[ahead]! += er * 7
        cur[ahead + 1]! += eg * 7
        cur[ahead + 2]! += eb * 7
        next[behind]! += er * 3
        next[behind + 1]! += eg * 3
        next[behind + 2]! += eb * 3
        next[c]! += er * 5
        next[c + 1]! += eg * 5
        next[c + 2]! += eb * 5
        next[ahead]! += er
        next[ahead + 1]! += eg
        next[ahead + 2]! += eb
      }
    }
    const t = cur
    cur = next
    next = t
    next.fill(0)
  }
  return out
}
