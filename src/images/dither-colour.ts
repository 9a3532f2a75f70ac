// Dithering to a colour panel's inks (Spectra 6, ACeP 7), aiming at the colours the panel really
// shows (INKS[…].measured), not at the pure colours firmware names them by.
//
// Choices, and why:
// - Colours are compared and errors diffused in CIELAB, so "nearest" is what the eye calls nearest:
//   with the measured inks a weighted RGB distance picks noticeably wrong inks (a mid-grey is
//   closer in RGB to the dark green ink than to the panel's greyish white; in Lab it is not). The
//   cost, measured on the display benchmark's 800×480 image, is in docs/generation.md.
// - The picture's tonal range is mapped onto the panel's: its white onto the panel's white, its
//   black onto the panel's black, the grey axis between them onto the line joining the two (the
//   panel's white is greyish and a little tinted). Without this every tone lighter than the
//   panel's white (about L* 80 on Spectra 6) would print as plain white and highlights would be
//   lost; with it, white paper stays clean white ink and black stays black, with no error left.
// - The target (pixel + incoming error) is brought into the box spanned by the inks in L, a and b
//   (see toInkBox: saturation is reduced towards the panel's grey, keeping the hue), so colours
//   the panel cannot reach do not pile up unbounded error and smear across the image.
// - Floyd–Steinberg scans rows serpentine (left→right, then right→left), against the diagonal
//   "worm" artefacts of a fixed direction; Atkinson (which passes on only 6/8 of the error, for
//   crisper, more contrasty results) does too.
// - Blue noise here is Thomas Knoll's pattern dithering: for each colour a "plan" of inks whose
//   average approximates it (a short 1-D error diffusion), sorted dark to light; each pixel takes
//   the plan entry its blue-noise rank selects. Plans depend only on the colour, so they are
//   cached per palette for colour cells (32 levels a channel), each computed from its cell's own
//   colour, never from the pixel that happened to come first: the same input gives the same bytes
//   whatever was converted before.
import { blueNoiseRanks, BLUE_NOISE_SIZE, TILE_MASK } from './blue-noise.js'
import { rowToLab, type PixelSource } from './lab.js'
import type { Rgb } from './profiles.js'

/** A palette's inks in CIELAB, with what the tonal mapping and toInkBox need. */
type PreparedPalette = {
  n: number
  L: Float64Array
  A: Float64Array
  B: Float64Array
  /** Each ink's place when the inks are sorted dark to light (for Knoll plans). */
  lightnessRank: Uint8Array
  /**
   * Picture → panel, for a source colour (L, a, b): L' = black + L·lScale, a' = a + aBlack + L·aScale,
   * b' likewise. Source white (sRGB 255, 255, 255) lands on the white ink, source black on the
   * black ink, greys on the line between them.
   */
  black: readonly [number, number, number]
  white: readonly [number, number, number]
  /** The grey axis from the black ink to the white ink: t = (L − black L)·greyStep, a = black a + t·aGrey. */
  greyStep: number
  aGrey: number
  bGrey: number
  lScale: number
  aScale: number
  bScale: number
  /** The box the inks span. */
  min: readonly [number, number, number]
  max: readonly [number, number, number]
  /** Nearest-ink cache over that box (see CELL). */
  cells: Uint8Array
  dims: readonly [number, number, number]
}

/** CIELAB of 8-bit sRGB colours through the same tables as the pixels, so equal colours convert equally. */
function labOf(colours: readonly Rgb[]): Float64Array {
  const out = new Float64Array(colours.length * 3)
  rowToLab(Uint8Array.from(colours.flat()), 0, colours.length, out)
  return out
}

const prepared = new WeakMap<readonly Rgb[], PreparedPalette>()

// Nearest-ink cache: the inks' box in Lab is cut into cubes of CELL units. A cube whose eight
// corners all have the same strictly nearest ink lies wholly inside that ink's region (regions of
// nearest points are convex), so every target in it gets that ink without a search; cubes on a
// boundary are marked and searched exactly. Same result as a full search (the tests compare them);
// about an eighth off the colour diffusion's time on the benchmark image. Filled lazily; a few
// hundred KiB per palette at most.
const CELL = 2
const CELL_UNKNOWN = 0
const CELL_MIXED = 255

function prepare(palette: readonly Rgb[]): PreparedPalette {
  let p = prepared.get(palette)
  if (p) return p
  const n = palette.length
  const lab = labOf(palette)
  const L = new Float64Array(n)
  const A = new Float64Array(n)
  const B = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    L[i] = lab[i * 3]!
    A[i] = lab[i * 3 + 1]!
    B[i] = lab[i * 3 + 2]!
  }
  // The panel's black and white: the darkest and the lightest ink counting colourfulness against
  // them (L* ± C*), since a colour ink can be as light as the white (Spectra 6's yellow is within
  // 1 L* of its white) but never as grey.
  let dark = 0
  let light = 0
  const chroma = (i: number) => Math.hypot(A[i]!, B[i]!)
  for (let i = 1; i < n; i++) {
    if (L[i]! + chroma(i) < L[dark]! + chroma(dark)) dark = i
    if (L[i]! - chroma(i) > L[light]! - chroma(light)) light = i
  }
  const lightnessRank = new Uint8Array(n)
  ;[...Array(n).keys()]
    .sort((a, b) => L[a]! - L[b]! || a - b)
    .forEach((ink, place) => {
      lightnessRank[ink] = place
    })
  // Source white is L* 100 with a and b a hair off zero (the sRGB primaries' rounding): taken out,
  // so a white picture area maps onto the white ink with no error left over to spread.
  const [wl, wa, wb] = labOf([[255, 255, 255]])
  const min = [Math.min(...L), Math.min(...A), Math.min(...B)] as const
  const max = [Math.max(...L), Math.max(...A), Math.max(...B)] as const
  const dims = [0, 1, 2].map((k) => Math.floor((max[k]! - min[k]!) / CELL) + 1) as unknown as readonly [number, number, number]
  p = {
    n,
    L,
    A,
    B,
    lightnessRank,
    black: [L[dark]!, A[dark]!, B[dark]!],
    white: [L[light]!, A[light]!, B[light]!],
    greyStep: 1 / (L[light]! - L[dark]! || 1),
    aGrey: A[light]! - A[dark]!,
    bGrey: B[light]! - B[dark]!,
    lScale: (L[light]! - L[dark]!) / wl!,
    aScale: (A[light]! - A[dark]! - wa!) / wl!,
    bScale: (B[light]! - B[dark]! - wb!) / wl!,
    min,
    max,
    cells: new Uint8Array(n < CELL_MIXED ? dims[0] * dims[1] * dims[2] : 0),
    dims,
  }
  prepared.set(palette, p)
  return p
}

/** Index of the ink nearest to (l, a, b) by CIELAB distance (ΔE*76); on a tie the lower index. */
function nearestIndex(p: PreparedPalette, l: number, a: number, b: number): number {
  let best = 0
  let bestD = Infinity
  for (let i = 0; i < p.n; i++) {
    const dl = l - p.L[i]!
    const da = a - p.A[i]!
    const db = b - p.B[i]!
    const d = dl * dl + da * da + db * db
    if (d < bestD) {
      bestD = d
      best = i
    }
  }
  return best
}

/** Index of the ink strictly nearest to (l, a, b), or -1 on a tie. */
function strictNearest(p: PreparedPalette, l: number, a: number, b: number): number {
  let best = -1
  let bestD = Infinity
  for (let i = 0; i < p.n; i++) {
    const dl = l - p.L[i]!
    const da = a - p.A[i]!
    const db = b - p.B[i]!
    const d = dl * dl + da * da + db * db
    if (d < bestD) {
      bestD = d
      best = i
    } else if (d === bestD) {
      best = -1
    }
  }
  return best
}

function classify(p: PreparedPalette, cell: number): number {
  const [, na, nb] = p.dims
  const ib = cell % nb
  const ia = ((cell - ib) / nb) % na
  const il = (cell - ib - ia * nb) / (na * nb)
  const l0 = p.min[0] + il * CELL
  const a0 = p.min[1] + ia * CELL
  const b0 = p.min[2] + ib * CELL
  const first = strictNearest(p, l0, a0, b0)
  if (first < 0) return CELL_MIXED
  for (let corner = 1; corner < 8; corner++) {
    const i = strictNearest(p, l0 + (corner & 4 ? CELL : 0), a0 + (corner & 2 ? CELL : 0), b0 + (corner & 1 ? CELL : 0))
    if (i !== first) return CELL_MIXED
  }
  return first + 1
}

/** The entry of `palette` nearest to `colour` as the eye judges it (CIELAB distance). */
export function nearestInk(palette: readonly Rgb[], colour: Rgb): number {
  const [l, a, b] = labOf([colour])
  return nearestIndex(prepare(palette), l!, a!, b!)
}

/** Scratch result of toInkBox (the hot loop calls it only for targets outside the box). */
const boxed = new Float64Array(3)

/**
 * Bring a target into the box the inks span: lightness is clamped, and a colour too saturated for
 * the box is moved straight towards the panel's grey at that lightness (on the line from its black
 * to its white ink) until it fits, so its hue is kept. Clamping a and b each on its own would
 * turn hues: a bright green, far outside in a but not in b, would come out yellow.
 */
function toInkBox(p: PreparedPalette, l: number, a: number, b: number): Float64Array {
  const [lMin, aMin, bMin] = p.min
  const [lMax, aMax, bMax] = p.max
  const ll = Math.max(lMin, Math.min(lMax, l))
  boxed[0] = ll
  boxed[1] = a
  boxed[2] = b
  if (a < aMin || a > aMax || b < bMin || b > bMax) {
    // Where the grey axis is at this lightness; inside the box, as both its ends are.
    const t = Math.max(0, Math.min(1, (ll - p.black[0]) * p.greyStep))
    const aN = p.black[1] + t * p.aGrey
    const bN = p.black[2] + t * p.bGrey
    const da = a - aN
    const db = b - bN
    let f = a < aMin ? (aMin - aN) / da : a > aMax ? (aMax - aN) / da : 1
    if (b < bMin) f = Math.min(f, (bMin - bN) / db)
    else if (b > bMax) f = Math.min(f, (bMax - bN) / db)
    boxed[1] = aN + f * da
    boxed[2] = bN + f * db
  }
  return boxed
}

/** Floyd–Steinberg (7, 3, 5, 1 / 16) or Atkinson (six neighbours, 1/8 each) in CIELAB, serpentine. */
export function diffuseColour(
  rgb: PixelSource,
  width: number,
  height: number,
  palette: readonly Rgb[],
  kernel: 'floyd-steinberg' | 'atkinson',
): Uint8Array {
  const p = prepare(palette)
  const [lMin, aMin, bMin] = p.min
  const [lMax, aMax, bMax] = p.max
  const [l0, a0, b0] = p.black
  const { lScale, aScale, bScale } = p
  const atkinson = kernel === 'atkinson'
  const { greyStep, aGrey, bGrey } = p
  const { cells } = p
  const useCells = cells.length > 0
  const [, na, nb] = p.dims
  const inv = 1 / CELL
  const out = new Uint8Array(width * height)
  const lab = new Float64Array(width * 3)
  // Error rows for this line and the next two, with two cells of margin either side: cell x + 2 holds pixel x.
  const rowLen = (width + 4) * 3
  let e0 = new Float64Array(rowLen)
  let e1 = new Float64Array(rowLen)
  let e2 = new Float64Array(rowLen)
  for (let y = 0; y < height; y++) {
    const rowStart = y * width
    rowToLab(rgb, rowStart, width, lab)
    const ltr = (y & 1) === 0
    const s = ltr ? 3 : -3
    const end = ltr ? width : -1
    for (let x = ltr ? 0 : width - 1; x !== end; x += ltr ? 1 : -1) {
      const o = x * 3
      const c = o + 6
      // Tonal mapping and incoming error, then into the inks' box.
      const srcL = lab[o]!
      let l = l0 + srcL * lScale + e0[c]!
      let a = lab[o + 1]! + a0 + srcL * aScale + e0[c + 1]!
      let b = lab[o + 2]! + b0 + srcL * bScale + e0[c + 2]!
      // Into the inks' box: toInkBox written out, with the same arithmetic (most pixels of a
      // saturated picture need it, and the call and its result array cost a fifth of the loop).
      l = Math.max(lMin, Math.min(lMax, l))
      if (a < aMin || a > aMax || b < bMin || b > bMax) {
        const t = Math.max(0, Math.min(1, (l - l0) * greyStep))
        const aN = a0 + t * aGrey
        const bN = b0 + t * bGrey
        const da = a - aN
        const db = b - bN
        let f = a < aMin ? (aMin - aN) / da : a > aMax ? (aMax - aN) / da : 1
        if (b < bMin) f = Math.min(f, (bMin - bN) / db)
        else if (b > bMax) f = Math.min(f, (bMax - bN) / db)
        a = aN + f * da
        b = bN + f * db
      }
      let best: number
      if (useCells) {
        const cell = ((((l - lMin) * inv) | 0) * na + (((a - aMin) * inv) | 0)) * nb + (((b - bMin) * inv) | 0)
        let v = cells[cell]!
        if (v === CELL_UNKNOWN) v = cells[cell] = classify(p, cell)
        best = v === CELL_MIXED ? nearestIndex(p, l, a, b) : v - 1
      } else {
        best = nearestIndex(p, l, a, b)
      }
      out[rowStart + x] = best
      const el = l - p.L[best]!
      const ea = a - p.A[best]!
      const eb = b - p.B[best]!
      if (atkinson) {
        const ql = el / 8
        const qa = ea / 8
        const qb = eb / 8
        const s2 = c + 2 * s
        e0[c + s]! += ql
        e0[c + s + 1]! += qa
        e0[c + s + 2]! += qb
        e0[s2]! += ql
        e0[s2 + 1]! += qa
        e0[s2 + 2]! += qb
        e1[c - s]! += ql
        e1[c - s + 1]! += qa
        e1[c - s + 2]! += qb
        e1[c]! += ql
        e1[c + 1]! += qa
        e1[c + 2]! += qb
        e1[c + s]! += ql
        e1[c + s + 1]! += qa
        e1[c + s + 2]! += qb
        e2[c]! += ql
        e2[c + 1]! += qa
        e2[c + 2]! += qb
      } else {
        e0[c + s]! += (el * 7) / 16
        e0[c + s + 1]! += (ea * 7) / 16
        e0[c + s + 2]! += (eb * 7) / 16
        e1[c - s]! += (el * 3) / 16
        e1[c - s + 1]! += (ea * 3) / 16
        e1[c - s + 2]! += (eb * 3) / 16
        e1[c]! += (el * 5) / 16
        e1[c + 1]! += (ea * 5) / 16
        e1[c + 2]! += (eb * 5) / 16
        e1[c + s]! += el / 16
        e1[c + s + 1]! += ea / 16
        e1[c + s + 2]! += eb / 16
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

// Knoll plans: PLAN inks per colour cell. Each channel is rounded to one of the LEVELS values 0, 8,
// 16, …, 248, 255 (so black, white, pure inks and the mid-greys 64, 128, 192 are exact and get
// the plan of their own colour), 33³ cells; PLAN = 32 so a plan's mixing steps are about as fine
// as the cells. 1.1 MiB per palette, filled lazily and kept for the palette's lifetime.
const LEVELS = 33
const PLAN = 32
const RANK_SHIFT = Math.log2((BLUE_NOISE_SIZE * BLUE_NOISE_SIZE) / PLAN)
const plans = new WeakMap<readonly Rgb[], { inks: Uint8Array; done: Uint8Array }>()
/** 8-bit value → its level (0..LEVELS − 1), rounded. */
const toLevel = Uint8Array.from({ length: 256 }, (_, v) => (v + 4) >> 3)
const levelValue = (q: number) => Math.min(255, q * 8)

function makePlan(p: PreparedPalette, cell: number, into: Uint8Array): void {
  const [srcL, srcA, srcB] = labOf([
    [levelValue((cell / (LEVELS * LEVELS)) | 0), levelValue(((cell / LEVELS) | 0) % LEVELS), levelValue(cell % LEVELS)],
  ])
  const [l, a, b] = toInkBox(
    p,
    p.black[0] + srcL! * p.lScale,
    srcA! + p.black[1] + srcL! * p.aScale,
    srcB! + p.black[2] + srcL! * p.bScale,
  ) as unknown as [number, number, number]
  const at = cell * PLAN
  // A short 1-D error diffusion: each step takes the ink nearest to the colour plus the error so far.
  let el = 0
  let ea = 0
  let eb = 0
  for (let k = 0; k < PLAN; k++) {
    const i = nearestIndex(p, l + el, a + ea, b + eb)
    into[at + k] = i
    el += l - p.L[i]!
    ea += a - p.A[i]!
    eb += b - p.B[i]!
  }
  // Dark to light, so low blue-noise ranks take the darker inks (as for greys).
  const rank = p.lightnessRank
  into.set(
    [...into.subarray(at, at + PLAN)].sort((x, y) => rank[x]! - rank[y]!),
    at,
  )
}

/** Ordered dithering with the blue-noise map, through per-colour Knoll plans. */
export function blueNoiseColour(rgb: PixelSource, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  const p = prepare(palette)
  let cache = plans.get(palette)
  if (!cache) {
    cache = { inks: new Uint8Array(LEVELS ** 3 * PLAN), done: new Uint8Array(LEVELS ** 3) }
    plans.set(palette, cache)
  }
  const { inks, done } = cache
  const ranks = blueNoiseRanks()
  const level = toLevel
  const out = new Uint8Array(width * height)
  // Imported bindings can be getters (tsx runs this as CommonJS): copied into locals for the loop.
  const side = BLUE_NOISE_SIZE
  const mask = TILE_MASK
  for (let y = 0; y < height; y++) {
    const rankRow = (y & mask) * side
    for (let x = 0, i = y * width, s = i * 3; x < width; x++, i++, s += 3) {
      const cell = (level[rgb[s]!]! * LEVELS + level[rgb[s + 1]!]!) * LEVELS + level[rgb[s + 2]!]!
      if (!done[cell]) {
        makePlan(p, cell, inks)
        done[cell] = 1
      }
      out[i] = inks[cell * PLAN + (ranks[rankRow + (x & mask)]! >> RANK_SHIFT)]!
    }
  }
  return out
}
