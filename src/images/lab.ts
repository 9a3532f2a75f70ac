// sRGB → CIELAB (D65 white, the sRGB standard's), for choosing the ink nearest to a colour the
// way the eye judges it. Colour dithering runs on every pixel, so besides the plain conversion
// (`srgbToLab`, for palettes and tests) there is a table-driven one for whole rows.
import type { Rgb } from './profiles.js'

export type Lab = [number, number, number]

/** Packed 8-bit RGB pixels. */
export type PixelSource = Uint8Array | Uint8ClampedArray

// D65 reference white in XYZ, Y = 1.
const XN = 0.95047
const ZN = 1.08883
const EPSILON = (6 / 29) ** 3
const KAPPA_SLOPE = 1 / (3 * (6 / 29) ** 2)

/** sRGB transfer function undone: 8-bit code → linear light 0..1. */
function srgbToLinear(v: number): number {
  const c = v / 255
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
}

const labF = (t: number) => (t > EPSILON ? Math.cbrt(t) : t * KAPPA_SLOPE + 4 / 29)

/** CIELAB of an sRGB colour (components 0..255, fractions allowed). */
export function srgbToLab([r, g, b]: Rgb): Lab {
  const lr = srgbToLinear(r)
  const lg = srgbToLinear(g)
  const lb = srgbToLinear(b)
  const fx = labF((0.4124 * lr + 0.3576 * lg + 0.1805 * lb) / XN)
  const fy = labF(0.2126 * lr + 0.7152 * lg + 0.0722 * lb)
  const fz = labF((0.0193 * lr + 0.1192 * lg + 0.9505 * lb) / ZN)
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)]
}

// Tables for the per-pixel path: linear light per 8-bit code, and f(t) on a 1/65536 grid of t
// (X/Xn and Z/Zn reach just above 1 for white, hence the few extra cells). Nearest cell, no
// interpolation: the steepest part of f lies below EPSILON, where f is a straight line, and above
// it the grid is fine enough that L* is within 0.02 of the exact value.
const F_STEPS = 65536
let linear: Float64Array | undefined
let fTable: Float64Array | undefined

function tables(): { linear: Float64Array; fTable: Float64Array } {
  if (!linear || !fTable) {
    linear = new Float64Array(256)
    for (let v = 0; v < 256; v++) linear[v] = srgbToLinear(v)
    fTable = new Float64Array(F_STEPS + 64)
    for (let i = 0; i < fTable.length; i++) fTable[i] = labF(i / F_STEPS)
  }
  return { linear, fTable }
}

/**
 * Convert `count` packed RGB pixels of `rgb` starting at pixel `from` into `out` as L, a, b
 * triples (out[0..3·count)). Equal to `srgbToLab` within 0.05 in each component.
 */
export function rowToLab(rgb: PixelSource, from: number, count: number, out: Float64Array): void {
  const { linear: lin, fTable: f } = tables()
  const sx = F_STEPS / XN
  const sz = F_STEPS / ZN
  for (let i = 0, p = from * 3, o = 0; i < count; i++, p += 3, o += 3) {
    const r = lin[rgb[p]!]!
    const g = lin[rgb[p + 1]!]!
    const b = lin[rgb[p + 2]!]!
    const fx = f[((0.4124 * r + 0.3576 * g + 0.1805 * b) * sx + 0.5) | 0]!
    const fy = f[((0.2126 * r + 0.7152 * g + 0.0722 * b) * F_STEPS + 0.5) | 0]!
    const fz = f[((0.0193 * r + 0.1192 * g + 0.9505 * b) * sz + 0.5) | 0]!
    out[o] = 116 * fy - 16
    out[o + 1] = 500 * (fx - fy)
    out[o + 2] = 200 * (fy - fz)
  }
}
