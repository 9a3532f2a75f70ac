// The panels' inks: the codes their controllers use, the measured colours dithering aims at, the
// choice of the nearest ink in CIELAB, and what reaches the device: every produced PNG / BMP
// carries the panel's own codes as its indices (decoded here from the file's bytes), with the pure
// ink colours in its colour table, for every dithering method, the same bytes every time.
import t from 'tap'
import { convertForDisplay, renderForDisplay } from '../../src/images/convert.js'
import { nearestInk } from '../../src/images/dither-colour.js'
import { ditherToPalette } from '../../src/images/dither.js'
import { rowToLab, srgbToLab } from '../../src/images/lab.js'
import {
  DEFAULT_DITHER,
  DITHER_METHODS,
  INKS,
  MEASURED_PALETTES,
  PALETTES,
  UNUSED_CODE_COLOUR,
  type DisplayProfile,
  type Rgb,
} from '../../src/images/profiles.js'
import { checkerboardShare, decodeBmpIndices, decodePngIndices, drawnPng, solidPng } from './pixels.js'

const codeOf = (palette: 'spectra6' | 'acep7', name: string) => INKS[palette].find((i) => i.name === name)!.code

t.test("each panel's inks carry its controller's codes", async (t) => {
  // Waveshare EPD_7in3e.h (Spectra 6) and EPD_7in3f.h (ACeP): the codes are the panels' own.
  const codes = (p: keyof typeof INKS) => Object.fromEntries(INKS[p].map((i) => [i.name, i.code]))
  t.same(codes('spectra6'), { black: 0, white: 1, yellow: 2, red: 3, blue: 5, green: 6 })
  t.same(codes('acep7'), { black: 0, white: 1, green: 2, blue: 3, red: 4, yellow: 5, orange: 6 })
  t.same(codes('bw'), { black: 0, white: 1 })
  for (const [name, inks] of Object.entries(INKS)) {
    const table = PALETTES[name as keyof typeof PALETTES]
    t.equal(new Set(inks.map((i) => i.code)).size, inks.length, `${name}: codes are distinct`)
    for (const ink of inks) t.same(table[ink.code], ink.pure, `${name}: colour table entry ${ink.code} is pure ${ink.name}`)
    const unused = table.map((_, code) => code).filter((code) => !inks.some((i) => i.code === code))
    t.same(unused, name === 'spectra6' ? [4] : [], `${name}: codes without an ink`)
    for (const code of unused) t.same(table[code], UNUSED_CODE_COLOUR, `${name}: code ${code} holds the placeholder`)
  }
})

t.test('CIELAB conversion', async (t) => {
  const near = (got: number[], want: number[], tol: number) => got.every((v, i) => Math.abs(v - want[i]!) <= tol)
  // Reference values (sRGB, D65).
  for (const [rgb, lab] of [
    [
      [255, 255, 255],
      [100, 0, 0],
    ],
    [
      [0, 0, 0],
      [0, 0, 0],
    ],
    [
      [255, 0, 0],
      [53.24, 80.09, 67.2],
    ],
    [
      [0, 255, 0],
      [87.73, -86.18, 83.18],
    ],
    [
      [0, 0, 255],
      [32.3, 79.19, -107.86],
    ],
    [
      [119, 119, 119],
      [50.03, 0, 0],
    ],
  ] as Array<[Rgb, number[]]>) {
    t.ok(near(srgbToLab(rgb), lab, 0.05), `${rgb} → ${srgbToLab(rgb).map((v) => v.toFixed(2))}`)
  }
  // The table-driven per-pixel conversion agrees with the exact one on a 17³ grid of colours.
  const grid: number[] = []
  for (let r = 0; r <= 255; r += 15.9375)
    for (let g = 0; g <= 255; g += 15.9375) for (let b = 0; b <= 255; b += 15.9375) grid.push(Math.round(r), Math.round(g), Math.round(b))
  const out = new Float64Array(grid.length)
  rowToLab(Uint8Array.from(grid), 0, grid.length / 3, out)
  let worst = 0
  for (let i = 0; i < grid.length; i += 3) {
    const exact = srgbToLab([grid[i]!, grid[i + 1]!, grid[i + 2]!])
    for (let k = 0; k < 3; k++) worst = Math.max(worst, Math.abs(out[i + k]! - exact[k]!))
  }
  t.ok(worst < 0.01, `largest difference ${worst.toFixed(4)} over ${grid.length / 3} colours`)
})

t.test('the nearest ink is chosen against the measured colours, by CIELAB distance', async (t) => {
  for (const palette of ['spectra6', 'acep7'] as const) {
    MEASURED_PALETTES[palette].forEach((colour, i) => {
      t.equal(nearestInk(MEASURED_PALETTES[palette], colour), i, `${palette}: measured ${INKS[palette][i]!.name} is itself`)
    })
  }
  const spectra = MEASURED_PALETTES.spectra6
  const pure = INKS.spectra6.map((i) => i.pure)
  const name = (i: number) => INKS.spectra6[i]!.name
  // Dark colours the panel shows with its own (dark) inks; against the pure inks they were black.
  for (const [colour, ink] of [
    [[20, 40, 110], 'blue'],
    [[40, 100, 60], 'green'],
    [[120, 30, 30], 'red'],
  ] as Array<[Rgb, string]>) {
    t.equal(name(nearestInk(spectra, colour)), ink, `${colour} → ${ink} on the measured inks`)
    t.equal(name(nearestInk(pure, colour)), 'black', `${colour} → black on the pure inks`)
  }
  // Why CIELAB and not the former weighted RGB distance (3·dr² + 4·dg² + 2·db²): against the
  // measured inks it calls mid-greys green, since the panel's white (190, 200, 200) is far from
  // RGB white and its green (39, 102, 60) is dark and dull. In Lab, the grey is nearer the white.
  const weightedRgb = (palette: readonly Rgb[], c: Rgb) => {
    const d = palette.map((p) => 3 * (c[0] - p[0]) ** 2 + 4 * (c[1] - p[1]) ** 2 + 2 * (c[2] - p[2]) ** 2)
    return d.indexOf(Math.min(...d))
  }
  for (const [grey, ink] of [
    [128, 'white'],
    [60, 'black'],
  ] as const) {
    t.equal(name(nearestInk(spectra, [grey, grey, grey])), ink, `grey ${grey} → ${ink} in Lab`)
    t.equal(name(weightedRgb(spectra, [grey, grey, grey])), 'green', `grey ${grey} → green by weighted RGB`)
  }
  // ACeP: an olive is the yellow ink in Lab (weighted RGB picks orange).
  t.equal(INKS.acep7[nearestInk(MEASURED_PALETTES.acep7, [150, 140, 20])]!.name, 'yellow', 'ACeP: olive 150,140,20 → yellow')
})

// Full-height stripes of pure colours, then a grey ramp: survive the cover crop (1024×768 → 800×480).
const stripes: Rgb[] = [
  [0, 0, 0],
  [255, 255, 255],
  [255, 0, 0],
  [0, 255, 0],
  [0, 0, 255],
  [255, 255, 0],
  [255, 128, 0],
]
const W = 800
const H = 480
const cardPng = () =>
  drawnPng(1024, 768, (x, y) => {
    const s = Math.floor(x / 128)
    if (s < stripes.length) return stripes[s]!
    const v = Math.round((y / 767) * 255)
    return [v, v, v]
  })

/** The most used index in stripe s (100 px wide at 800 px), and its share. */
function stripeMajority(indices: Uint8Array, s: number): [number, number] {
  const counts = new Map<number, number>()
  for (let y = 0; y < H; y++)
    for (let x = s * 100 + 10; x < s * 100 + 90; x++) counts.set(indices[y * W + x]!, (counts.get(indices[y * W + x]!) ?? 0) + 1)
  const [index, n] = [...counts].sort((a, b) => b[1] - a[1])[0]!
  return [index, n / (80 * H)]
}

t.test("colour PNGs: indices are the panel's codes, the colour table the pure inks", async (t) => {
  const png = await cardPng()
  for (const palette of ['spectra6', 'acep7'] as const) {
    const profile: DisplayProfile = { width: W, height: H, palette }
    const pixels = await renderForDisplay(png, profile)
    for (const dither of DITHER_METHODS) {
      const [variant] = await convertForDisplay(png, { ...profile, dither })
      const file = decodePngIndices(variant!.data)
      t.equal(file.bitDepth, 4, `${palette}/${dither}: 4 bits per pixel`)
      t.same(file.palette, PALETTES[palette], `${palette}/${dither}: PLTE holds the pure inks by code`)
      // Pixel for pixel: the ink dithering chose (its place in INKS), written as that ink's code.
      const chosen = ditherToPalette(pixels.data, W, H, MEASURED_PALETTES[palette], dither)
      let wrong = 0
      for (let i = 0; i < chosen.length; i++) if (file.indices[i] !== INKS[palette][chosen[i]!]!.code) wrong++
      t.equal(wrong, 0, `${palette}/${dither}: every index is the code of the chosen ink`)
      const used = new Set(file.indices)
      if (palette === 'spectra6') t.notOk(used.has(4), 'spectra6: code 4 (no ink) is never used')
      // What a pure stripe comes out as, by its main code.
      for (const [s, ink] of [
        [0, 'black'],
        [1, 'white'],
        [2, 'red'],
        [4, 'blue'],
        [5, 'yellow'],
      ] as const) {
        const [code, share] = stripeMajority(file.indices, s)
        t.equal(
          code,
          codeOf(palette, ink),
          `${palette}/${dither}: the ${ink} stripe is mostly code ${codeOf(palette, ink)} (${(share * 100).toFixed(0)}%)`,
        )
      }
    }
  }
  // Spectra 6 green (39, 102, 60) is dark: a bright green is shown lighter with white, yet its
  // stripe holds green ink, code 6, where a fixed 0..5 numbering would have written 5 (blue).
  const [spectra] = await convertForDisplay(png, { width: W, height: H, palette: 'spectra6' })
  const green = decodePngIndices(spectra!.data).indices
  let greenInk = 0
  for (let y = 0; y < H; y++) for (let x = 310; x < 390; x++) if (green[y * W + x] === 6) greenInk++
  t.ok(greenInk / (80 * H) > 0.15, `spectra6: green stripe has ${((greenInk / (80 * H)) * 100).toFixed(0)}% code 6`)
})

t.test('1-bit BMP and PNG: index 0 is black, 1 white, in both files, for every method', async (t) => {
  const png = await cardPng()
  for (const dither of DITHER_METHODS) {
    const [bmp, png1] = await convertForDisplay(png, { width: W, height: H, palette: 'bw', dither })
    const fromBmp = decodeBmpIndices(bmp!.data)
    const fromPng = decodePngIndices(png1!.data)
    t.same(fromBmp.palette, PALETTES.bw, `${dither}: BMP colour table black, white`)
    t.same(fromPng.palette, PALETTES.bw, `${dither}: PLTE black, white`)
    t.ok(Buffer.from(fromBmp.indices).equals(Buffer.from(fromPng.indices)), `${dither}: same indices in both`)
    t.same(stripeMajority(fromBmp.indices, 0), [0, 1], `${dither}: black stripe all 0`)
    t.same(stripeMajority(fromBmp.indices, 1), [1, 1], `${dither}: white stripe all 1`)
  }
})

t.test('conversion is deterministic for every palette and method', async (t) => {
  const png = await cardPng()
  for (const palette of ['bw', 'gray4', 'spectra6', 'acep7']) {
    for (const dither of DITHER_METHODS) {
      const profile: DisplayProfile = { width: 320, height: 192, palette, dither }
      const a = await convertForDisplay(png, profile)
      const b = await convertForDisplay(png, profile)
      t.ok(
        a.every((v, i) => v.data.equals(b[i]!.data)),
        `${palette}/${dither}: same bytes twice`,
      )
    }
  }
})

t.test("a profile's dither is used, and without one the palette's default", async (t) => {
  t.equal(DEFAULT_DITHER.bw, 'blue-noise', '1-bit panels default to blue noise')
  const grey = await solidPng(256, 256, [128, 128, 128])
  const texture = async (dither?: (typeof DITHER_METHODS)[number]) => {
    const [bmp] = await convertForDisplay(grey, { width: 256, height: 256, palette: 'bw', ...(dither ? { dither } : {}) })
    return checkerboardShare(decodeBmpIndices(bmp!.data).indices, 256, 256)
  }
  const fs = await texture('floyd-steinberg')
  const byDefault = await texture()
  t.ok(fs > 0.8, `with floyd-steinberg a 50% grey is ${(fs * 100).toFixed(0)}% checkerboard`)
  t.ok(byDefault < 0.4, `by default ${(byDefault * 100).toFixed(0)}%`)
  t.equal(await texture('blue-noise'), byDefault, 'the default is blue noise')
  // A value this service does not know (say, stored by a newer version) falls back to the default.
  const [odd] = await convertForDisplay(grey, { width: 256, height: 256, palette: 'bw', dither: 'riemersma' as 'atkinson' })
  const [plain] = await convertForDisplay(grey, { width: 256, height: 256, palette: 'bw' })
  t.ok(odd!.data.equals(plain!.data), 'an unknown method → the default')
})
