// Display profiles and their fixed palettes. The conversion for a display quantises to exactly
// these colours (sharp's palette output is adaptive, so it cannot be used for this).
export type Palette = 'bw' | 'gray4' | 'spectra6' | 'acep7' | 'color'
export type Fit = 'cover' | 'contain'
export type DisplayProfile = { width: number; height: number; palette: Palette | string; fit?: Fit; inline?: boolean }

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
