// Floyd–Steinberg to a fixed palette: palette colours map to themselves, tone and average colour
// are kept (mid-grey ≈ half black, a grey ramp darkens steadily, an in-gamut colour's average over
// an area is the colour), and bad arguments are refused.
import t from 'tap'
import { ditherToPalette, isGreyPalette } from '../../src/images/dither.js'
import { PALETTES, type Rgb } from '../../src/images/profiles.js'

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

function meanColour(indices: Uint8Array, palette: readonly Rgb[]): [number, number, number] {
  const sum = [0, 0, 0]
  for (const i of indices) {
    const c = palette[i]!
    sum[0]! += c[0]
    sum[1]! += c[1]
    sum[2]! += c[2]
  }
  return sum.map((s) => s / indices.length) as [number, number, number]
}

t.test('grey palettes are detected', async (t) => {
  t.equal(isGreyPalette(PALETTES.bw), true)
  t.equal(isGreyPalette(PALETTES.gray4), true)
  t.equal(isGreyPalette(PALETTES.spectra6), false)
  t.equal(isGreyPalette(PALETTES.acep7), false)
})

t.test('every palette colour maps to its own index, with no error to spread', async (t) => {
  for (const [name, palette] of Object.entries(PALETTES)) {
    // One 16-pixel-wide band per palette colour, 8 rows high.
    const width = 16 * palette.length
    const height = 8
    const rgb = new Uint8Array(width * height * 3)
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) rgb.set(palette[Math.floor(x / 16)]!, (y * width + x) * 3)
    }
    const indices = ditherToPalette(rgb, width, height, palette)
    let wrong = 0
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) if (indices[y * width + x] !== Math.floor(x / 16)) wrong++
    t.equal(wrong, 0, `${name}: exact colours stay exact`)
  }
})

t.test('mid-grey is about half black; lighter greys have fewer black pixels', async (t) => {
  const half = shares(ditherToPalette(uniform(200, 200, [128, 128, 128]), 200, 200, PALETTES.bw), 2)
  t.ok(half[0]! >= 0.45 && half[0]! <= 0.55, `black share ${half[0]!.toFixed(4)} within 0.45..0.55`)

  // A horizontal ramp 0 → 255: the black share falls band by band.
  const width = 256
  const height = 64
  const ramp = new Uint8Array(width * height * 3)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) ramp.fill(x, (y * width + x) * 3, (y * width + x) * 3 + 3)
  const indices = ditherToPalette(ramp, width, height, PALETTES.bw)
  const bandBlack: number[] = []
  for (let band = 0; band < 8; band++) {
    let black = 0
    for (let y = 0; y < height; y++) for (let x = band * 32; x < band * 32 + 32; x++) if (indices[y * width + x] === 0) black++
    bandBlack.push(black / (32 * height))
  }
  t.ok(
    bandBlack.every((v, i) => i === 0 || v < bandBlack[i - 1]!),
    `black share falls steadily across the ramp: ${bandBlack.map((v) => v.toFixed(2)).join(' ')}`,
  )
  t.ok(bandBlack[0]! > 0.9 && bandBlack[7]! < 0.1, 'ends are nearly solid')
})

t.test('the grey path uses luma, so colours of equal brightness dither alike', async (t) => {
  // Pure green is much brighter than pure blue to the eye (Rec. 601: 150 vs 29 of 256).
  const green = shares(ditherToPalette(uniform(100, 100, [0, 255, 0]), 100, 100, PALETTES.bw), 2)
  const blue = shares(ditherToPalette(uniform(100, 100, [0, 0, 255]), 100, 100, PALETTES.bw), 2)
  t.ok(green[1]! > 0.5 && green[1]! < 0.7, `green is ~59% white (${green[1]!.toFixed(3)})`)
  t.ok(blue[1]! > 0.05 && blue[1]! < 0.17, `blue is ~11% white (${blue[1]!.toFixed(3)})`)
})

t.test('colour palettes keep the average colour of in-gamut areas', async (t) => {
  const spectra = PALETTES.spectra6
  // Orange on Spectra 6 (no orange ink): half red, half yellow.
  const orange = shares(ditherToPalette(uniform(200, 200, [255, 128, 0]), 200, 200, spectra), spectra.length)
  t.ok(orange[3]! > 0.45 && orange[3]! < 0.55, `red share ${orange[3]!.toFixed(3)}`)
  t.ok(orange[2]! > 0.45 && orange[2]! < 0.55, `yellow share ${orange[2]!.toFixed(3)}`)
  // ACeP has orange ink, so the same orange is exact there.
  const acepOrange = shares(ditherToPalette(uniform(50, 50, [255, 128, 0]), 50, 50, PALETTES.acep7), 7)
  t.equal(acepOrange[6], 1, 'ACeP orange is solid orange')

  for (const colour of [
    [200, 100, 50],
    [128, 0, 128],
    [60, 160, 90],
  ] as Rgb[]) {
    const mean = meanColour(ditherToPalette(uniform(200, 200, colour), 200, 200, spectra), spectra)
    t.ok(
      mean.every((m, i) => Math.abs(m - colour[i]!) <= 3),
      `average of dithered ${colour} is ${mean.map((m) => m.toFixed(1))}`,
    )
  }
})

/**
 * Plain reference for the colour path: the same serpentine Floyd–Steinberg with the same integer
 * rounding and clamping, but a full nearest-colour search for every pixel and no cache.
 */
function referenceDither(rgb: Uint8Array, width: number, height: number, palette: readonly Rgb[]): Uint8Array {
  const out = new Uint8Array(width * height)
  const err = Array.from({ length: height + 1 }, () => Array.from({ length: width + 2 }, () => [0, 0, 0]))
  for (let y = 0; y < height; y++) {
    const dir = y % 2 === 0 ? 1 : -1
    for (let k = 0; k < width; k++) {
      const x = dir === 1 ? k : width - 1 - k
      const e = err[y]![x + 1]!
      const v = [0, 1, 2].map((ch) => Math.min(255, Math.max(0, rgb[(y * width + x) * 3 + ch]! + ((e[ch]! + 8) >> 4))))
      let best = 0
      let bestD = Infinity
      palette.forEach((p, i) => {
        const d = 3 * (v[0]! - p[0]) ** 2 + 4 * (v[1]! - p[1]) ** 2 + 2 * (v[2]! - p[2]) ** 2
        if (d < bestD) {
          bestD = d
          best = i
        }
      })
      out[y * width + x] = best
      for (let ch = 0; ch < 3; ch++) {
        const q = v[ch]! - palette[best]![ch]!
        err[y]![x + 1 + dir]![ch]! += q * 7
        err[y + 1]![x + 1 - dir]![ch]! += q * 3
        err[y + 1]![x + 1]![ch]! += q * 5
        err[y + 1]![x + 1 + dir]![ch]! += q
      }
    }
  }
  return out
}

t.test('colour path (with its nearest-colour cache) equals a plain full-search reference', async (t) => {
  const width = 97
  const height = 61
  let seed = 12345
  const noise = new Uint8Array(width * height * 3).map(() => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed >> 23
  })
  const smooth = new Uint8Array(width * height * 3).map((_, i) => Math.round(127.5 + 127.5 * Math.sin(i / 211)))
  for (const [name, palette] of [
    ['spectra6', PALETTES.spectra6],
    ['acep7', PALETTES.acep7],
  ] as const) {
    for (const [kind, rgb] of [
      ['noise', noise],
      ['smooth', smooth],
    ] as const) {
      const ours = ditherToPalette(rgb, width, height, palette)
      const ref = referenceDither(rgb, width, height, palette)
      let differ = 0
      for (let i = 0; i < ours.length; i++) if (ours[i] !== ref[i]) differ++
      t.equal(differ, 0, `${name} on ${kind}: identical indices`)
    }
  }
})

t.test('bad arguments are refused', async (t) => {
  t.throws(() => ditherToPalette(new Uint8Array(10), 2, 2, PALETTES.bw), RangeError, 'buffer too short for the size')
  t.throws(() => ditherToPalette(new Uint8Array(12), 0, 4, PALETTES.bw), RangeError, 'zero width')
  t.throws(() => ditherToPalette(new Uint8Array(12), 2, 2, []), RangeError, 'empty palette')
})
