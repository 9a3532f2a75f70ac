// Display profiles and their fixed palettes. The conversion for a display quantises to exactly
// these colours (sharp's palette output is adaptive, so it cannot be used for this).
export const PALETTE_NAMES = ['bw', 'gray4', 'spectra6', 'acep7', 'color'] as const
export type Palette = (typeof PALETTE_NAMES)[number]
type Fit = 'cover' | 'contain'
export type DisplayProfile = {
  width: number
  height: number
  palette: Palette | string
  fit?: Fit
  inline?: boolean
  dither?: DitherMethod
}

/**
 * Common panels, for the simulator, the benchmarks and the tests: a 7.5" 1-bit e-paper (800×480),
 * the same panel in 4-grey mode, 7.3" Spectra 6 and ACeP 7-colour e-paper (800×480), and a 7" LCD
 * (1024×600). Defined once so they cannot disagree on a size.
 */
export const DISPLAY_PRESETS = {
  'bw-800x480': { width: 800, height: 480, palette: 'bw' },
  gray4: { width: 800, height: 480, palette: 'gray4' },
  spectra6: { width: 800, height: 480, palette: 'spectra6' },
  acep7: { width: 800, height: 480, palette: 'acep7' },
  color: { width: 1024, height: 600, palette: 'color' },
} as const satisfies Record<string, { width: number; height: number; palette: Palette }>

/**
 * The largest displays served, by the panels that exist. Colour (LCD) frames: 4K UHD, 3840×2160 in
 * either orientation, the largest LCD photo frames and signage panels of this class. E-paper
 * (every palette we dither): 3200×1800, E Ink's largest panel (the 25.3" Carta), above the 31.2"
 * 2560×1440 and the 13.3" Spectra 6 and Kaleido panels (1600×1200); ACeP panels stop at 7.3"
 * (800×480). Dithering costs time in proportion to pixels, so a display declaring more than any
 * real panel would only make every conversion for it slower: it is refused when it pairs.
 */
export const DISPLAY_LIMITS = {
  color: { maxSide: 3840, maxPixels: 3840 * 2160 },
  epaper: { maxSide: 3200, maxPixels: 3200 * 1800 },
} as const

/** Why a display is larger than any panel this service serves, or undefined when it is not. */
export function displayTooLarge(profile: Pick<DisplayProfile, 'width' | 'height' | 'palette'>): string | undefined {
  const colour = profile.palette === 'color'
  const limit = colour ? DISPLAY_LIMITS.color : DISPLAY_LIMITS.epaper
  const kind = colour ? 'a colour display' : 'an e-paper display'
  const { width, height } = profile
  if (width > limit.maxSide || height > limit.maxSide) return `${kind} is at most ${limit.maxSide} pixels on a side, got ${width}×${height}`
  if (width * height > limit.maxPixels) return `${kind} has at most ${limit.maxPixels.toLocaleString('en')} pixels, got ${width}×${height}`
  return undefined
}

/** The display a device has when nothing says otherwise. */
export const DEFAULT_DISPLAY = DISPLAY_PRESETS['bw-800x480']

export type Rgb = readonly [number, number, number]

/** The palettes that are dithered (everything but full colour). */
export type PalettePanel = Exclude<Palette, 'color'>

/** How a palette display is dithered: two error diffusions and one ordered (threshold map) method. */
export const DITHER_METHODS = ['floyd-steinberg', 'atkinson', 'blue-noise'] as const
export type DitherMethod = (typeof DITHER_METHODS)[number]

/**
 * The method used when a display profile names none. 1-bit panels get blue noise: Floyd–Steinberg
 * turns a flat mid-grey into a near-perfect checkerboard, which e-paper shows as a coarse texture
 * (test/images/dither.test.ts measures it). With more levels (4 greys) or colour inks that
 * texture is much weaker, and error diffusion keeps more detail.
 */
export const DEFAULT_DITHER: Record<Palette, DitherMethod> = {
  bw: 'blue-noise',
  gray4: 'floyd-steinberg',
  spectra6: 'floyd-steinberg',
  acep7: 'floyd-steinberg',
  color: 'floyd-steinberg', // not used: colour displays get JPEG / PNG without dithering
}

/**
 * One ink of a panel. `code` is the index the panel's controller uses for it and the index written
 * into the BMP / PNG; `pure` is the colour firmware knows it by (the file's colour table, see
 * PALETTES); `measured` is what the panel really shows, the colour dithering aims with.
 */
export type Ink = { name: string; code: number; pure: Rgb; measured: Rgb }

const ink = (name: string, code: number, pure: Rgb, measured: Rgb = pure): Ink => ({ name, code, pure, measured })

/**
 * The inks of every palette display, in the order dithering considers them.
 *
 * Spectra 6 (E Ink Spectra 6 / "E6", e.g. Waveshare 7.3" e-Paper (E), Pimoroni Inky Impression
 * 7.3" 2025): codes from Waveshare's driver, waveshareteam/e-Paper
 * RaspberryPi_JetsonNano/c/lib/e-Paper/EPD_7in3e.h (BLACK 0, WHITE 1, YELLOW 2, RED 3, BLUE 5,
 * GREEN 6; 4 is not an ink on this panel), the same as pimoroni/inky inky/inky_e673.py. Measured
 * colours from aitjcize/epaper-image-convert src/palettes.js (SPECTRA6.perceived: photographs of
 * a Waveshare PhotoPainter 7.3" Spectra 6 panel, see aitjcize/esp32-photoframe
 * docs/MEASURED_PALETTE.md). Pimoroni's inky_e673.py SATURATED_PALETTE was not used: its values
 * are those of the older 5.7" ACeP driver (inky_uc8159.py) in another order, not this panel's.
 *
 * ACeP 7-colour (E Ink Gallery / ACeP, e.g. Waveshare 5.65" and 7.3" e-Paper (F), Pimoroni Inky
 * Impression 4", 5.7" and 7.3"): codes from waveshareteam/e-Paper
 * RaspberryPi_JetsonNano/c/lib/e-Paper/EPD_7in3f.h (BLACK 0, WHITE 1, GREEN 2, BLUE 3, RED 4,
 * YELLOW 5, ORANGE 6; 7 "clean" is not a colour), the same as pimoroni/inky inky/inky_uc8159.py and
 * inky/inky_ac073tc1a.py. Measured colours from paperlesspaper/epdoptimize
 * src/dither/data/default-palettes.json ("acep": the calibrated colours that library, made by an
 * e-paper frame maker, dithers ACeP images against). Pimoroni's were not used: inky_uc8159.py's
 * SATURATED_PALETTE is so dull (red 156, 72, 75 beside orange 177, 106, 73) that pure red comes
 * out as orange ink and white, and Pimoroni's own set_image only ever mixes it half and half with
 * the pure colours (saturation=0.5); inky_ac073tc1a.py's has a yellow (255, 255, 68) lighter than
 * its white (217, 242, 255), which no reflective panel shows.
 *
 * 1-bit and 4-grey panels have no published measurements that fit panels in general; their inks
 * are taken as ideal.
 */
export const INKS: Record<PalettePanel, readonly Ink[]> = {
  bw: [ink('black', 0, [0, 0, 0]), ink('white', 1, [255, 255, 255])],
  gray4: [
    ink('black', 0, [0, 0, 0]),
    ink('dark grey', 1, [85, 85, 85]),
    ink('light grey', 2, [170, 170, 170]),
    ink('white', 3, [255, 255, 255]),
  ],
  spectra6: [
    ink('black', 0, [0, 0, 0], [2, 2, 2]),
    ink('white', 1, [255, 255, 255], [190, 200, 200]),
    ink('yellow', 2, [255, 255, 0], [205, 202, 0]),
    ink('red', 3, [255, 0, 0], [135, 19, 0]),
    ink('blue', 5, [0, 0, 255], [5, 64, 158]),
    ink('green', 6, [0, 255, 0], [39, 102, 60]),
  ],
  acep7: [
    ink('black', 0, [0, 0, 0], [25, 30, 33]),
    ink('white', 1, [255, 255, 255], [241, 241, 241]),
    ink('green', 2, [0, 255, 0], [83, 164, 40]),
    ink('blue', 3, [0, 0, 255], [49, 49, 143]),
    ink('red', 4, [255, 0, 0], [210, 14, 19]),
    ink('yellow', 5, [255, 255, 0], [243, 207, 17]),
    ink('orange', 6, [255, 128, 0], [184, 94, 28]),
  ],
}

/**
 * A code no ink of the panel has (Spectra 6's 4) still needs a colour-table entry so later codes
 * keep their numbers. No pixel ever uses it; magenta, which no panel here has, so a reader that maps
 * colours back to inks by exact value cannot mistake it for a real ink.
 */
export const UNUSED_CODE_COLOUR: Rgb = [255, 0, 255]

function colourTable(inks: readonly Ink[]): readonly Rgb[] {
  const table: Rgb[] = Array.from({ length: Math.max(...inks.map((i) => i.code)) + 1 }, () => UNUSED_CODE_COLOUR)
  for (const i of inks) table[i.code] = i.pure
  return table
}

/**
 * The colour table written into each palette file (PNG PLTE, BMP colour table), indexed by the
 * panel's own codes, holding the pure ink colours rather than the measured ones: firmware that
 * reads the index gets the controller's code directly, and firmware that decodes to RGB and
 * matches exact ink colours still finds them (the Waveshare PhotoPainter's stock BMP reader does,
 * see aitjcize/esp32-photoframe docs/MEASURED_PALETTE.md, which keeps pure colours in its files
 * for that reason); measured colours in the table would break such firmware. They only steer
 * dithering, so an image viewer shows these files brighter and more saturated than the panel will.
 */
export const PALETTES: Record<PalettePanel, readonly Rgb[]> = {
  bw: colourTable(INKS.bw),
  gray4: colourTable(INKS.gray4),
  spectra6: colourTable(INKS.spectra6),
  acep7: colourTable(INKS.acep7),
}

/** What dithering aims at for each palette: the measured ink colours, in INKS order. */
export const MEASURED_PALETTES: Record<PalettePanel, readonly Rgb[]> = {
  bw: INKS.bw.map((i) => i.measured),
  gray4: INKS.gray4.map((i) => i.measured),
  spectra6: INKS.spectra6.map((i) => i.measured),
  acep7: INKS.acep7.map((i) => i.measured),
}

/** The method a profile asks for, or its palette's default (also for a value this service does not know). */
export function ditherOf(profile: Pick<DisplayProfile, 'dither'>, palette: Palette): DitherMethod {
  const d = profile.dither
  return d !== undefined && (DITHER_METHODS as readonly string[]).includes(d) ? d : DEFAULT_DITHER[palette]
}

/** One file produced for a display. `format` names the variant in URLs and messages. */
export type Variant = {
  format: 'bmp1' | 'png1' | 'png-gray4' | 'png-spectra6' | 'png-acep7' | 'jpeg' | 'png'
  contentType: 'image/bmp' | 'image/png' | 'image/jpeg'
  width: number
  height: number
  data: Buffer
}
