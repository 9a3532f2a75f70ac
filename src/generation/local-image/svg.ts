// Small helpers for writing the local model's SVG: numbers, colours and a seeded PRNG.
import { createHash } from 'node:crypto'

/** One decimal is finer than a pixel and keeps the SVG (and its bytes) short and stable. */
export function fmt(n: number): string {
  return String(Math.round(n * 10) / 10)
}

export type Rgb = readonly [number, number, number]

export function hex(c: Rgb): string {
  return `#${c
    .map((v) =>
      Math.max(0, Math.min(255, Math.round(v)))
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`
}

export function rgb(hexColour: string): Rgb {
  const n = Number.parseInt(hexColour.slice(1), 16)
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255]
}

/** `a` moved towards `b` by t (0: a, 1: b). */
export function mix(a: Rgb, b: Rgb, t: number): Rgb {
  return [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t]
}

export type Random = {
  /** In [0, 1). */
  next(): number
  /** In [lo, hi). */
  between(lo: number, hi: number): number
  int(lo: number, hiExclusive: number): number
  pick<T>(items: readonly T[]): T
}

/**
 * A deterministic PRNG (mulberry32) for one element of the picture, seeded by the image's seed
 * and the element's name: each element draws from its own stream, so adding a subject to a
 * prompt changes that subject's part of the picture and leaves the others where they were (but
 * for what keeps clear of it on the ground).
 */
export function randomFor(seed: number, stream: string): Random {
  let a = createHash('sha256').update(`${seed}:${stream}`).digest().readUInt32BE(0)
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    between: (lo, hi) => lo + next() * (hi - lo),
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo)),
    pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number],
  }
}
