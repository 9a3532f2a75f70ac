// Sizes for layouts that must hold from a 400×300 panel up to 1872×1404: every font size and
// spacing is a multiple of one unit derived from the frame's size, so a template never measures.
import type { ScreenDeviceContext } from './types.js'

/** What a frame of unknown size is drawn for: TRMNL's and most 7.5" panels. */
const DEFAULT_SIZE = { width: 800, height: 480 }

export type Sizes = {
  width: number
  height: number
  unit: number
  xs: number
  s: number
  m: number
  l: number
  xl: number
  xxl: number
  pad: number
}

export function sizesFor(device: ScreenDeviceContext | undefined): Sizes {
  const width = device && device.width > 0 ? device.width : DEFAULT_SIZE.width
  const height = device && device.height > 0 ? device.height : DEFAULT_SIZE.height
  // The shorter side, relative to 480 px, scales the type: a wide panel gets no taller letters.
  const unit = Math.max(0.6, Math.min(width / 800, height / 480))
  const px = (n: number) => Math.max(8, Math.round(n * unit))
  return { width, height, unit, xs: px(14), s: px(18), m: px(24), l: px(36), xl: px(64), xxl: px(120), pad: px(16) }
}
