// Display profiles and their fixed palettes. The conversion for a display quantises to exactly
// these colours (sharp's palette output is adaptive, so it cannot be used for this).
export const PALETTE_NAMES = ['bw', 'gray4', 'spectra6', 'acep7', 'color'] as const
export type Palette = (typeof PALETTE_NAMES)[number]
type Fit = 'cover' | 'contain'
export type DisplayProfile = { width: number; height: number; palette: Palette | string; fit?: Fit; inline?: boolean }

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

/** The display a device has when nothing says otherwise. */
export const DEFAULT_DISPLAY = DISPLAY_PRESETS['bw-800x480']

export type Rgb = readonly [number, number, number]

export const PALETTES: Record<Exclude<Palette, 'color'>, readonly Rgb[]> = {
  bw: [
    [0, 0, 0],
    [255, 255, 255],
  ],
  gray4: [
    [0, 0, 0],
    [85, 85, 85],
    [170, 170, 170],
    [255, 255, 255],
  ],
  // E Ink Spectra 6: black, white, yellow, red, blue, green.
  spectra6: [
    [0, 0, 0],
    [255, 255, 255],
    [255, 255, 0],
    [255, 0, 0],
    [0, 0, 255],
    [0, 255, 0],
  ],
  // ACeP 7-colour (Gallery): black, white, green, blue, red, yellow, orange.
  acep7: [
    [0, 0, 0],
    [255, 255, 255],
    [0, 255, 0],
    [0, 0, 255],
    [255, 0, 0],
    [255, 255, 0],
    [255, 128, 0],
  ],
}

/** One file produced for a display. `format` names the variant in URLs and messages. */
export type Variant = {
  format: 'bmp1' | 'png1' | 'png-gray4' | 'png-spectra6' | 'png-acep7' | 'jpeg' | 'png'
  contentType: 'image/bmp' | 'image/png' | 'image/jpeg'
  width: number
  height: number
  data: Buffer
}
