// Dithering to a fixed palette with each method (Floyd–Steinberg, Atkinson, blue noise): palette
// colours map to themselves, tone is kept (mid-grey ≈ half black, a grey ramp darkens steadily),
// colour palettes keep the average colour in CIELAB, the same input always gives the same output,
// the blue-noise map is blue noise, Floyd–Steinberg's checkerboard in a flat mid-grey is measured
// and the other two methods avoid it, the colour path (with its nearest-ink cache) equals a plain
// full search, and bad arguments are refused.
import t from 'tap'
import { BLUE_NOISE_SIZE, blueNoiseRanks, buildBlueNoiseRanks } from '../../src/images/blue-noise.js'
import { ditherToPalette, isGreyPalette } from '../../src/images/dither.js'
import { rowToLab } from '../../src/images/lab.js'
import { DITHER_METHODS, INKS, MEASURED_PALETTES, PALETTES, type Rgb } from '../../src/images/profiles.js'
import { checkerboardShare } from './pixels.js'

function uniform(width: number, height: number, [r, g, b]: Rgb): Uint8Array {
  const out = new Uint8Array(width * height * 3)
  for (let i = 0; i < out.length; i += 3) {
    out[i] = r
    out[i + 1] = g
    out[i + 2] = b
  }
  return out
}

function shares(indices: Uint8Array, colours: number): number[] {
  const counts = new Array<number>(colours).fill(0)
  for (const i of indices) counts[i]!++
  return counts.map((c) => c / indices.length)
}

const labOf = (colours: readonly Rgb[]): number[][] => {
  const out = new Float64Array(colours.length * 3)
  rowToLab(Uint8Array.from(colours.flat()), 0, colours.length, out)
  return colours.map((_, i) => [out[i * 3]!, out[i * 3 + 1]!, out[i * 3 + 2]!])
}

/** Mean CIELAB of the inks chosen. */
function meanLab(indices: Uint8Array, palette: readonly Rgb[]): number[] {
  const lab = labOf(palette)
  const sum = [0, 0, 0]
  for (const i of indices) for (let k = 0; k < 3; k++) sum[k]! += lab[i]![k]!
  return sum.map((s) => s / indices.length)
}

const deltaE = (x: number[], y: number[]) => Math.hypot(x[0]! - y[0]!, x[1]! - y[1]!, x[2]! - y[2]!)

/** A photo-like test card: smooth colour fields, a hard-edged disc, mild deterministic noise. */
function card(width: number, height: number): Uint8Array {
  const out = new Uint8Array(width * height * 3)
  let seed = 0x2545f491
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed ^= seed << 13
      seed ^= seed >>> 17
      seed ^= seed << 5
      const n = ((seed >>> 0) / 0x100000000 - 0.5) * 24
      const disc = (x - width / 2) ** 2 + (y - height / 2) ** 2 < (height / 4) ** 2
      const c = (v: number) => Math.max(0, Math.min(255, Math.round(v + n)))
      const i = (y * width + x) * 3
      out[i] = c(disc ? 220 : 128 + 120 * Math.sin(x / 23))
      out[i + 1] = c(disc ? 60 : 128 + 120 * Math.sin(y / 31 + 1))
      out[i + 2] = c(x > width * 0.7 && y > height * 0.6 ? 30 : 128 + 120 * Math.cos((x + y) / 41))
    }
  }
  return out
}

t.test('grey palettes are detected', async (t) => {
  t.equal(isGreyPalette(PALETTES.bw), true)
  t.equal(isGreyPalette(PALETTES.gray4), true)
  t.equal(isGreyPalette(MEASURED_PALETTES.spectra6), false)
  t.equal(isGreyPalette(MEASURED_PALETTES.acep7), false)
})

t.test('every palette colour maps to its own index, with every method', async (t) => {
  const palettes = { ...PALETTES, 'spectra6 (pure inks)': INKS.spectra6.map((i) => i.pure) }
  for (const method of DITHER_METHODS) {
    for (const [name, palette] of Object.entries(palettes)) {
      // One 16-pixel-wide band per palette colour, 8 rows high.
      const width = 16 * palette.length
      const height = 8
      const rgb = new Uint8Array(width * height * 3)
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) rgb.set(palette[Math.floor(x / 16)]!, (y * width + x) * 3)
      }
      const indices = ditherToPalette(rgb, width, height, palette, method)
      let wrong = 0
      for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) if (indices[y * width + x] !== Math.floor(x / 16)) wrong++
      t.equal(wrong, 0, `${method}, ${name}: exact colours stay exact`)
    }
  }
})

t.test('on measured inks, white paper is the white ink and black the black ink, with nothing else', async (t) => {
  for (const method of DITHER_METHODS) {
    for (const palette of ['spectra6', 'acep7'] as const) {
      const inks = MEASURED_PALETTES[palette]
      const names = INKS[palette].map((i) => i.name)
      for (const [what, colour] of [
        ['white', [255, 255, 255]],
        ['black', [0, 0, 0]],
      ] as const) {
        const used = new Set(ditherToPalette(uniform(64, 64, colour), 64, 64, inks, method))
        t.same(
          [...used].map((i) => names[i]),
          [what],
          `${method}, ${palette}: ${what} → only the ${what} ink (its measured colour is ${inks[names.indexOf(what)]})`,
        )
      }
    }
  }
})

t.test('mid-grey is about half black; lighter greys have fewer black pixels (every method)', async (t) => {
  for (const method of DITHER_METHODS) {
    const half = shares(ditherToPalette(uniform(200, 200, [128, 128, 128]), 200, 200, PALETTES.bw, method), 2)
    t.ok(half[0]! >= 0.45 && half[0]! <= 0.55, `${method}: black share ${half[0]!.toFixed(4)} within 0.45..0.55`)

    // A horizontal ramp 0 → 255: the black share falls band by band.
    const width = 256
    const height = 64
    const ramp = new Uint8Array(width * height * 3)
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) ramp.fill(x, (y * width + x) * 3, (y * width + x) * 3 + 3)
    const indices = ditherToPalette(ramp, width, height, PALETTES.bw, method)
    const bandBlack: number[] = []
    for (let band = 0; band < 8; band++) {
      let black = 0
      for (let y = 0; y < height; y++) for (let x = band * 32; x < band * 32 + 32; x++) if (indices[y * width + x] === 0) black++
      bandBlack.push(black / (32 * height))
    }
    t.ok(
      bandBlack.every((v, i) => i === 0 || v < bandBlack[i - 1]!),
      `${method}: black share falls steadily across the ramp: ${bandBlack.map((v) => v.toFixed(2)).join(' ')}`,
    )
    t.ok(bandBlack[0]! > 0.9 && bandBlack[7]! < 0.1, `${method}: ends are nearly solid`)
  }
})

t.test('blue noise keeps the exact tone of flat greys, on 2 and on 4 levels', async (t) => {
  for (const v of [32, 64, 128, 192, 224]) {
    const white = shares(ditherToPalette(uniform(128, 128, [v, v, v]), 128, 128, PALETTES.bw, 'blue-noise'), 2)[1]!
    t.ok(Math.abs(white - v / 255) < 0.002, `grey ${v}: white share ${white.toFixed(4)}, tone ${(v / 255).toFixed(4)}`)
  }
  // 100 lies between the levels 85 and 170: 15/85 of the way up.
  const four = shares(ditherToPalette(uniform(128, 128, [100, 100, 100]), 128, 128, PALETTES.gray4, 'blue-noise'), 4)
  t.equal(four[0]! + four[3]!, 0, 'only the two levels around it')
  t.ok(Math.abs(four[2]! - 15 / 85) < 0.002, `share of 170: ${four[2]!.toFixed(4)} (expected ${(15 / 85).toFixed(4)})`)
})

t.test('the grey path uses luma, so colours of equal brightness dither alike', async (t) => {
  // Pure green is much brighter than pure blue to the eye (Rec. 601: 150 vs 29 of 256).
  const green = shares(ditherToPalette(uniform(100, 100, [0, 255, 0]), 100, 100, PALETTES.bw), 2)
  const blue = shares(ditherToPalette(uniform(100, 100, [0, 0, 255]), 100, 100, PALETTES.bw), 2)
  t.ok(green[1]! > 0.5 && green[1]! < 0.7, `green is ~59% white (${green[1]!.toFixed(3)})`)
  t.ok(blue[1]! > 0.05 && blue[1]! < 0.17, `blue is ~11% white (${blue[1]!.toFixed(3)})`)
})

t.test('1-bit mid-grey: Floyd–Steinberg is a checkerboard, Atkinson and blue noise are not', async (t) => {
  const size = 256
  const grey = uniform(size, size, [128, 128, 128])
  const texture = Object.fromEntries(
    DITHER_METHODS.map((m) => [m, checkerboardShare(ditherToPalette(grey, size, size, PALETTES.bw, m), size, size)]),
  ) as Record<(typeof DITHER_METHODS)[number], number>
  t.comment(`share of 2×2 checkerboards in a 50% grey: ${JSON.stringify(texture)} (random pixels: 0.125)`)
  t.ok(texture['floyd-steinberg'] > 0.8, `Floyd–Steinberg: ${texture['floyd-steinberg'].toFixed(3)} of 2×2 windows are a checkerboard`)
  for (const m of ['atkinson', 'blue-noise'] as const) {
    t.ok(texture[m] < 0.4, `${m}: ${texture[m].toFixed(3)}, under 0.4`)
    t.ok(texture[m] < texture['floyd-steinberg'] / 2, `${m}: under half of Floyd–Steinberg's`)
  }
})

t.test('the blue-noise map: every rank once, the same on every build, dots spread evenly at every level', async (t) => {
  const ranks = blueNoiseRanks()
  const cells = BLUE_NOISE_SIZE * BLUE_NOISE_SIZE
  t.equal(ranks.length, cells)
  t.equal(new Set(ranks).size, cells, 'a permutation of 0..4095')
  t.same([...buildBlueNoiseRanks()], [...ranks], 'a second build is identical')
  // Blue noise has no clumps and no holes: every 8×8 window (wrapping around, as the map tiles)
  // holds close to its share of the pixels below each level. White noise of the same density
  // strays by 12–14 here; this map by at most 5.
  for (const level of [512, 1024, 2048, 3072]) {
    const expected = (64 * level) / cells
    let worst = 0
    for (let by = 0; by < BLUE_NOISE_SIZE; by++) {
      for (let bx = 0; bx < BLUE_NOISE_SIZE; bx++) {
        let n = 0
        for (let y = 0; y < 8; y++) {
          for (let x = 0; x < 8; x++) if (ranks[((by + y) % BLUE_NOISE_SIZE) * BLUE_NOISE_SIZE + ((bx + x) % BLUE_NOISE_SIZE)]! < level) n++
        }
        worst = Math.max(worst, Math.abs(n - expected))
      }
    }
    t.ok(worst <= 6, `ranks below ${level}: every 8×8 window holds ${expected} ± ${worst}`)
  }
})

t.test('every method is deterministic: same input, same output, whatever ran before', async (t) => {
  const width = 160
  const height = 96
  const a = card(width, height)
  const b = uniform(width, height, [90, 160, 220])
  for (const method of DITHER_METHODS) {
    for (const [name, palette] of Object.entries(MEASURED_PALETTES)) {
      // A copy of the palette starts with cold caches; the original's are warm from other images.
      const cold = ditherToPalette(
        a,
        width,
        height,
        palette.map((c) => [...c] as unknown as Rgb),
        method,
      )
      ditherToPalette(b, width, height, palette, method)
      const first = ditherToPalette(a, width, height, palette, method)
      ditherToPalette(b, width, height, palette, method)
      const again = ditherToPalette(a, width, height, palette, method)
      t.ok(Buffer.from(first).equals(Buffer.from(again)), `${method}, ${name}: identical on a second run`)
      t.ok(Buffer.from(first).equals(Buffer.from(cold)), `${method}, ${name}: identical with cold caches`)
    }
  }
})

t.test('colour palettes keep the average colour (in CIELAB) of areas they can show', async (t) => {
  // The pure ACeP inks include black 0,0,0 and white 255,255,255, so the tonal mapping onto the
  // panel's range changes nothing: the average of the chosen inks is the source colour, for
  // colours inside the inks' hull in Lab (muted ones; a bright colour can be out of reach there
  // even when RGB mixing would reach it). Atkinson passes on only 6/8 of the error, so it does not
  // keep averages (by design); Floyd–Steinberg does.
  const acep = INKS.acep7.map((i) => i.pure)
  for (const colour of [
    [150, 120, 110],
    [110, 100, 95],
    [120, 140, 110],
    [200, 170, 150],
  ] as Rgb[]) {
    const mean = meanLab(ditherToPalette(uniform(200, 200, colour), 200, 200, acep), acep)
    const want = labOf([colour])[0]!
    t.ok(deltaE(mean, want) < 1.5, `${colour} averages ΔE ${deltaE(mean, want).toFixed(2)} from its own Lab`)
  }
  // On the measured Spectra 6 inks a grey lands on the line from the panel's black to its white,
  // as far along as its lightness says (the tonal mapping): a quarter, half, three quarters.
  const inks = MEASURED_PALETTES.spectra6
  const [black, white] = labOf([inks[0]!, inks[1]!])
  for (const v of [59, 119, 185]) {
    const src = labOf([[v, v, v]])[0]!
    const want = black!.map((k, i) => k + (src[0]! / 100) * (white![i]! - k))
    const mean = meanLab(ditherToPalette(uniform(200, 200, [v, v, v]), 200, 200, inks), inks)
    t.ok(
      deltaE(mean, want) < 1.5,
      `grey ${v} (L* ${src[0]!.toFixed(1)}): average ΔE ${deltaE(mean, want).toFixed(2)} from its place on the panel's grey line`,
    )
  }
})

/**
 * Plain reference for the colour error diffusion, written from its description: CIELAB through the
 * same conversion, the panel's black and white (darkest and lightest ink counting L* ± C*), the
 * tonal mapping, the move into the inks' box keeping the hue, a full search of every ink, and the
 * same serpentine kernel with the same arithmetic. No caches.
 */
function referenceDiffusion(rgb: Uint8Array, width: number, height: number, palette: readonly Rgb[], atkinson: boolean): Uint8Array {
  const inks = labOf(palette)
  const score = (i: number, sign: number) => inks[i]![0]! + sign * Math.hypot(inks[i]![1]!, inks[i]![2]!)
  let k = 0
  let w = 0
  for (let i = 1; i < inks.length; i++) {
    if (score(i, 1) < score(k, 1)) k = i
    if (score(i, -1) > score(w, -1)) w = i
  }
  const black = inks[k]!
  const white = inks[w]!
  const paper = labOf([[255, 255, 255]])[0]!
  const lo = [0, 1, 2].map((c) => Math.min(...inks.map((p) => p[c]!)))
  const hi = [0, 1, 2].map((c) => Math.max(...inks.map((p) => p[c]!)))
  const scale = [0, 1, 2].map((c) => (white[c]! - black[c]! - (c === 0 ? 0 : paper[c]!)) / paper[0]!)
  const out = new Uint8Array(width * height)
  const err = Array.from({ length: height + 2 }, () => Array.from({ length: width + 4 }, () => [0, 0, 0]))
  const px = new Float64Array(3)
  for (let y = 0; y < height; y++) {
    const dir = y % 2 === 0 ? 1 : -1
    for (let n = 0; n < width; n++) {
      const x = dir === 1 ? n : width - 1 - n
      rowToLab(rgb, y * width + x, 1, px)
      const e = err[y]![x + 2]!
      let l = black[0]! + px[0]! * scale[0]! + e[0]!
      let a = px[1]! + black[1]! + px[0]! * scale[1]! + e[1]!
      let b = px[2]! + black[2]! + px[0]! * scale[2]! + e[2]!
      l = Math.min(hi[0]!, Math.max(lo[0]!, l))
      if (a < lo[1]! || a > hi[1]! || b < lo[2]! || b > hi[2]!) {
        // Towards the grey axis (black ink → white ink) at this lightness, as far as needed.
        const t = Math.min(1, Math.max(0, (l - black[0]!) * (1 / (white[0]! - black[0]!))))
        const aN = black[1]! + t * (white[1]! - black[1]!)
        const bN = black[2]! + t * (white[2]! - black[2]!)
        let f = 1
        if (a < lo[1]!) f = Math.min(f, (lo[1]! - aN) / (a - aN))
        else if (a > hi[1]!) f = Math.min(f, (hi[1]! - aN) / (a - aN))
        if (b < lo[2]!) f = Math.min(f, (lo[2]! - bN) / (b - bN))
        else if (b > hi[2]!) f = Math.min(f, (hi[2]! - bN) / (b - bN))
        a = aN + f * (a - aN)
        b = bN + f * (b - bN)
      }
      let best = 0
      let bestD = Infinity
      inks.forEach((p, i) => {
        const d = (l - p[0]!) * (l - p[0]!) + (a - p[1]!) * (a - p[1]!) + (b - p[2]!) * (b - p[2]!)
        if (d < bestD) {
          bestD = d
          best = i
        }
      })
      out[y * width + x] = best
      const q = [l - inks[best]![0]!, a - inks[best]![1]!, b - inks[best]![2]!]
      const spread: Array<[number, number, (v: number) => number]> = atkinson
        ? [
            [0, dir, (v) => v / 8],
            [0, 2 * dir, (v) => v / 8],
            [1, -dir, (v) => v / 8],
            [1, 0, (v) => v / 8],
            [1, dir, (v) => v / 8],
            [2, 0, (v) => v / 8],
          ]
        : [
            [0, dir, (v) => (v * 7) / 16],
            [1, -dir, (v) => (v * 3) / 16],
            [1, 0, (v) => (v * 5) / 16],
            [1, dir, (v) => v / 16],
          ]
      for (const [dy, dx, part] of spread) for (let c = 0; c < 3; c++) err[y + dy]![x + 2 + dx]![c]! += part(q[c]!)
    }
  }
  return out
}

t.test('colour diffusion (with its nearest-ink cache) equals a plain full-search reference', async (t) => {
  const width = 97
  const height = 61
  let seed = 12345
  const noise = new Uint8Array(width * height * 3).map(() => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed >> 23
  })
  const smooth = new Uint8Array(width * height * 3).map((_, i) => Math.round(127.5 + 127.5 * Math.sin(i / 211)))
  for (const [name, palette] of Object.entries(MEASURED_PALETTES)) {
    if (isGreyPalette(palette)) continue
    for (const [kind, rgb] of [
      ['noise', noise],
      ['smooth', smooth],
    ] as const) {
      for (const method of ['floyd-steinberg', 'atkinson'] as const) {
        const ours = ditherToPalette(rgb, width, height, palette, method)
        const ref = referenceDiffusion(rgb, width, height, palette, method === 'atkinson')
        let differ = 0
        for (let i = 0; i < ours.length; i++) if (ours[i] !== ref[i]) differ++
        t.equal(differ, 0, `${name}, ${method}, ${kind}: identical indices`)
      }
    }
  }
})

t.test('bad arguments are refused', async (t) => {
  t.throws(() => ditherToPalette(new Uint8Array(10), 2, 2, PALETTES.bw), RangeError, 'buffer too short for the size')
  t.throws(() => ditherToPalette(new Uint8Array(12), 0, 4, PALETTES.bw), RangeError, 'zero width')
  t.throws(() => ditherToPalette(new Uint8Array(12), 2, 2, []), RangeError, 'empty palette')
})
