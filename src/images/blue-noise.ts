// A blue-noise threshold map for ordered dithering, made by Ulichney's void-and-cluster method
// ("The void-and-cluster method for dither array generation", SPIE 1913, 1993) on first use and
// kept for the process. Ordered dithering compares each pixel with the map entry under it; with a
// blue-noise map every grey level becomes an even scatter of dots with no low-frequency clumps and
// no regular pattern, where Floyd–Steinberg turns 50 % grey into a checkerboard.
//
// Why made here rather than shipped: it is small (64 × 64) and takes tens of milliseconds, and code
// that makes it is easier to check than a table of 4,096 numbers. It is deterministic (a fixed seed,
// ties go to the lowest index, IEEE arithmetic), so every process builds the same map.

/** Side of the (toroidal, tiling) map; a power of two, so x & TILE_MASK is x mod the side. */
export const BLUE_NOISE_SIZE = 64
export const TILE_MASK = BLUE_NOISE_SIZE - 1
const N = BLUE_NOISE_SIZE * BLUE_NOISE_SIZE
/** Width of the Gaussian that measures clustering, in pixels (Ulichney's 1.5). */
const SIGMA = 1.5
/** Share of pixels set in the initial random pattern. */
const INITIAL_SHARE = 0.1

let cached: Uint16Array | undefined

/**
 * The map: for each pixel (row-major, BLUE_NOISE_SIZE wide), its rank 0..4095. Every rank occurs
 * once, and for any k the pixels of rank < k are spread evenly over the tile.
 */
export function blueNoiseRanks(): Uint16Array {
  cached ??= buildBlueNoiseRanks()
  return cached
}

/** Builds the map afresh (blueNoiseRanks keeps one); exported so tests can check two builds agree. */
export function buildBlueNoiseRanks(): Uint16Array {
  const S = BLUE_NOISE_SIZE
  // Gaussian weights out to RADIUS (beyond it they are below 2e-5 of the centre's), so a pixel's
  // "energy" (how crowded its neighbourhood is) is updated in a small window when a pixel is set
  // or cleared; the map wraps around, so the tile repeats without seams.
  const RADIUS = 7
  const SIDE = 2 * RADIUS + 1
  const kernel = new Float64Array(SIDE * SIDE)
  for (let dy = -RADIUS; dy <= RADIUS; dy++) {
    for (let dx = -RADIUS; dx <= RADIUS; dx++)
      kernel[(dy + RADIUS) * SIDE + dx + RADIUS] = Math.exp(-(dx * dx + dy * dy) / (2 * SIGMA * SIGMA))
  }
  const energy = new Float64Array(N)
  const on = new Uint8Array(N)
  const change = (p: number, sign: 1 | -1) => {
    on[p] = sign === 1 ? 1 : 0
    const py = (p / S) | 0
    const px = p - py * S
    for (let dy = -RADIUS; dy <= RADIUS; dy++) {
      const row = ((py + dy + S) % S) * S
      const k = (dy + RADIUS) * SIDE + RADIUS
      for (let dx = -RADIUS; dx <= RADIUS; dx++) energy[row + ((px + dx + S) % S)]! += sign * kernel[k + dx]!
    }
  }
  // Most crowded set pixel, or emptiest clear pixel; ties to the lowest index.
  const tightest = () => {
    let best = -1
    let bestE = -Infinity
    for (let p = 0; p < N; p++) {
      if (on[p] && energy[p]! > bestE) {
        bestE = energy[p]!
        best = p
      }
    }
    return best
  }
  const emptiest = () => {
    let best = -1
    let bestE = Infinity
    for (let p = 0; p < N; p++) {
      if (!on[p] && energy[p]! < bestE) {
        bestE = energy[p]!
        best = p
      }
    }
    return best
  }

  // 1. A random initial pattern (xorshift32, fixed seed), relaxed until moving the most crowded
  //    dot into the largest void puts it straight back.
  let seed = 0x2545f491
  const random = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 0x100000000
  }
  const initial = Math.round(N * INITIAL_SHARE)
  for (let set = 0; set < initial; ) {
    const p = Math.floor(random() * N)
    if (on[p]) continue
    change(p, 1)
    set++
  }
  for (let guard = 0; guard < N; guard++) {
    const cluster = tightest()
    change(cluster, -1)
    const gap = emptiest()
    if (gap === cluster) {
      change(cluster, 1)
      break
    }
    change(gap, 1)
  }
  const start = on.slice()
  const startEnergy = energy.slice()

  // 2. Ranks below the initial pattern: take away the most crowded dot, one at a time.
  const rank = new Uint16Array(N)
  for (let r = initial - 1; r >= 0; r--) {
    const p = tightest()
    rank[p] = r
    change(p, -1)
  }
  // 3. Ranks above it: from the initial pattern again, fill the largest void, one at a time.
  on.set(start)
  energy.set(startEnergy)
  for (let r = initial; r < N; r++) {
    const p = emptiest()
    rank[p] = r
    change(p, 1)
  }
  return rank
}
