// The panels of the boards TRMNL's firmware is built for, by the `Model` header each build sends
// (usetrmnl/trmnl-firmware include/config.h, DEVICE_MODEL per BOARD_*), and what each one's
// drawing code accepts (src/display.cpp, lib/trmnl/src/bmp.cpp). Looked up by an untrusted header:
// a Map, never an object's properties (a Model of `__proto__` is just an unknown board).
import semver from 'semver'

export type Panel = {
  width: number
  height: number
  /** What the service dithers to: 1-bit, or 4 greys (2 bits). */
  palette: 'bw' | 'gray4'
  /** The deepest PNG the board draws: 2 bits with bb_epaper (MAX_BIT_DEPTH 2), 8 with FastEPD (TRMNL X). */
  maxPngBits: 1 | 2 | 8
  /**
   * Whether the board draws a BMP: bmp.cpp's parseBMPHeader accepts 800×480 1-bit files only, and
   * display.cpp flips the rows with the panel's own size.
   */
  drawsBmp: boolean
}

/** bb_epaper boards: a 7.5" (or 4.26") 800×480 panel, 1-bit and 4-grey PNG, BMP before 1.5.2. */
const EPAPER_800x480: Panel = { width: 800, height: 480, palette: 'bw', maxPngBits: 2, drawsBmp: true }

const PANELS = new Map<string, Panel>([
  // BOARD_TRMNL: the original TRMNL.
  ['og', EPAPER_800x480],
  // Not a name the firmware sends: other self-hosted servers' name for the PNG-capable original.
  ['og_png', EPAPER_800x480],
  // BOARD_TRMNL_X: 10.3" 1872×1404 driven by FastEPD (display.cpp: setPanelSize(1872, 1404)), greys up to 8 bits, PNG only.
  ['x', { width: 1872, height: 1404, palette: 'gray4', maxPngBits: 8, drawsBmp: false }],
  // Stored by earlier versions of this service for the X.
  ['v2', { width: 1872, height: 1404, palette: 'gray4', maxPngBits: 8, drawsBmp: false }],
  // The DIY boards of config.h, each with a bb_epaper 800×480 panel.
  ['waveshare', EPAPER_800x480],
  ['seeed_esp32c3', EPAPER_800x480],
  ['seeed_esp32s3', EPAPER_800x480],
  ['xiao_epaper_display', EPAPER_800x480],
  ['reTerminal E1001', EPAPER_800x480],
  ['arduino_nano_esp32', EPAPER_800x480],
])

/** The panel of a model the firmware names; undefined for anything else (a board of its own). */
function panelOf(model: string | undefined): Panel | undefined {
  return model === undefined ? undefined : PANELS.get(model)
}

/** The largest side a board may declare with Width and Height (the service's display bound). */
const MAX_SIDE = 3840
const MIN_SIDE = 16

/**
 * The panel a frame has: its model's, at the size its Width and Height headers say when it sends
 * them (the firmware sends display_width() and display_height(): the panel's own size), else the
 * model's size; an unknown board is 800×480 1-bit unless it says its size.
 */
export function panelFor(h: { model?: string; width?: number; height?: number }): Panel {
  const known = panelOf(h.model) ?? EPAPER_800x480
  const ok = (v: number | undefined) => v !== undefined && Number.isInteger(v) && v >= MIN_SIDE && v <= MAX_SIDE
  if (!ok(h.width) || !ok(h.height)) return known
  const width = h.width!
  const height = h.height!
  if (width === known.width && height === known.height) return known
  // Another size than the model's: only an 800×480 file passes the BMP check.
  return { ...known, width, height, drawsBmp: known.drawsBmp && width === 800 && height === 480 }
}

/** The firmware bands that draw differently: BMP only before 1.5.2; PNG from 1.5.2; 1.6.6 on inverts 1-bit palette PNGs. */
export type FirmwareBand = 'bmp' | 'png' | 'png-1.6.6'

export function bandOf(firmware: string | undefined): FirmwareBand {
  const v = semver.coerce(firmware ?? '')
  // No version said: the BMP every firmware draws.
  if (!v) return 'bmp'
  if (semver.lt(v, '1.5.2')) return 'bmp'
  return semver.lt(v, '1.6.6') ? 'png' : 'png-1.6.6'
}
