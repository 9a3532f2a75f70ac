// The local model's figures, each drawn once in its own units: standing on the origin (its foot
// at 0, 0), 1 high, facing right. `place` moves and scales one into the picture, so a figure's
// shape is written once whatever its size, and flipping it is a negative scale.
import { fmt } from './svg.js'

export function place(x: number, y: number, size: number, figure: string, flip = false): string {
  return `<g transform="translate(${fmt(x)} ${fmt(y)}) scale(${flip ? '-' : ''}${fmt(size)} ${fmt(size)})">${figure}</g>`
}

/** Three decimals: unit-sized shapes are scaled up hundreds of times. */
function fmt3(n: number): string {
  return String(Math.round(n * 1000) / 1000)
}

/** A cloud 1 wide, centred on the origin (filled by its group). */
export const CLOUD =
  '<ellipse cx="0" cy="0" rx="0.5" ry="0.14"/><circle cx="-0.2" cy="-0.1" r="0.2"/><circle cx="0.08" cy="-0.17" r="0.26"/><circle cx="0.3" cy="-0.05" r="0.16"/>'

/** Craters on a moon of radius 1 centred on the origin. */
export const CRATERS =
  '<g fill="#cfc9ad"><circle cx="-0.3" cy="-0.2" r="0.22"/><circle cx="0.35" cy="0.25" r="0.15"/><circle cx="-0.05" cy="0.45" r="0.1"/></g>'

/**
 * A striped lighthouse: the tower narrows from 0.22 wide at its foot to 0.14 at 0.72 high, three
 * red bands, a gallery, the lantern and its roof. The outline keeps it apart from a sky of the
 * same brightness on a 1-bit display. `beam`, when given, is the colour of its two light beams.
 */
export function lighthouse(c: { wall: string; band: string; dark: string; roof: string; door: string; lamp: string; beam?: string }) {
  const half = (y: number) => 0.11 - 0.04 * (-y / 0.72)
  const band = (a: number, b: number) => `M${fmt3(-half(a))} ${a}L${fmt3(-half(b))} ${b}L${fmt3(half(b))} ${b}L${fmt3(half(a))} ${a}Z`
  const tower = 'M-0.11 0L-0.07 -0.72H0.07L0.11 0Z'
  const beams = c.beam ? `<path d="M0 -0.81L-3 -0.98L-3 -0.62ZM0 -0.81L3 -0.72L3 -0.42Z" fill="${c.beam}" fill-opacity="0.22"/>` : ''
  return `${beams}<path d="${tower}" fill="${c.wall}"/><path d="${band(-0.1, -0.22)}${band(-0.34, -0.46)}${band(-0.58, -0.7)}" fill="${c.band}"/><rect x="-0.1" y="-0.76" width="0.2" height="0.04" fill="${c.dark}"/><rect x="-0.055" y="-0.87" width="0.11" height="0.11" fill="${c.lamp}"/><path d="M-0.02 -0.87V-0.76M0.02 -0.87V-0.76" stroke="${c.dark}" stroke-width="0.008"/><path d="M-0.075 -0.87L0 -0.96L0.075 -0.87Z" fill="${c.roof}"/><path d="M0 -0.96V-1" stroke="${c.dark}" stroke-width="0.012"/><rect x="-0.025" y="-0.08" width="0.05" height="0.08" fill="${c.door}"/><path d="${tower}" fill="none" stroke="${c.dark}" stroke-width="0.012"/>`
}
/** Its width as a share of its height. */
export const LIGHTHOUSE_WIDTH = 0.22

/** A house 1.2 wide with a pitched roof, a chimney, a door and two windows. */
export function house(c: { wall: string; roof: string; door: string; pane: string }) {
  return `<rect x="0.22" y="-0.95" width="0.1" height="0.3" fill="${c.roof}"/><rect x="-0.5" y="-0.55" width="1" height="0.55" fill="${c.wall}"/><path d="M-0.6 -0.53L0 -1L0.6 -0.53Z" fill="${c.roof}"/><rect x="-0.1" y="-0.3" width="0.2" height="0.3" fill="${c.door}"/><g fill="${c.pane}"><rect x="-0.38" y="-0.42" width="0.18" height="0.16"/><rect x="0.2" y="-0.42" width="0.18" height="0.16"/></g>`
}

/** A sitting cat, its tail curled out behind it. */
export function cat(fur: string) {
  return `<path d="M-0.2 -0.05Q-0.6 -0.05 -0.5 -0.45" fill="none" stroke="${fur}" stroke-width="0.08" stroke-linecap="round"/><g fill="${fur}"><ellipse cx="0" cy="-0.3" rx="0.28" ry="0.32"/><circle cx="0.08" cy="-0.72" r="0.2"/><path d="M-0.1 -0.8L-0.08 -1L0.05 -0.89ZM0.11 -0.89L0.24 -1L0.26 -0.8Z"/></g><g fill="#c8e04a"><ellipse cx="0.01" cy="-0.74" rx="0.03" ry="0.045"/><ellipse cx="0.15" cy="-0.74" rx="0.03" ry="0.045"/></g>`
}

/** A standing dog in profile, tail up, looking right. */
export function dog(fur: string, ear: string) {
  return `<path d="M-0.42 -0.62Q-0.62 -0.72 -0.6 -0.95" fill="none" stroke="${fur}" stroke-width="0.07" stroke-linecap="round"/><g fill="${fur}"><rect x="-0.42" y="-0.45" width="0.1" height="0.45"/><rect x="-0.27" y="-0.45" width="0.1" height="0.45"/><rect x="0.13" y="-0.45" width="0.1" height="0.45"/><rect x="0.27" y="-0.45" width="0.1" height="0.45"/><rect x="-0.47" y="-0.72" width="0.86" height="0.36" rx="0.16"/><path d="M0.2 -0.7L0.42 -0.95L0.56 -0.85L0.38 -0.5Z"/><ellipse cx="0.52" cy="-0.9" rx="0.19" ry="0.15"/><ellipse cx="0.7" cy="-0.85" rx="0.12" ry="0.08"/></g><ellipse cx="0.44" cy="-0.86" rx="0.06" ry="0.13" fill="${ear}"/><g fill="#1d1d1d"><circle cx="0.8" cy="-0.87" r="0.03"/><circle cx="0.57" cy="-0.94" r="0.025"/></g>`
}

/** How far the animals reach: [left, right, top] in their units, facing right. */
export const EXTENT = { cat: [-0.6, 0.35, 1], dog: [-0.65, 0.85, 1.05] } as const

/** A pine of three tiers; with `snow`, snow on the upper two. */
export function pine(c: { leaf: string; trunk: string; snow?: string }) {
  const snow = c.snow ? `<path d="M-0.1 -0.81L0 -1L0.1 -0.81ZM-0.12 -0.57L0 -0.8L0.12 -0.57Z" fill="${c.snow}"/>` : ''
  return `<rect x="-0.05" y="-0.15" width="0.1" height="0.15" fill="${c.trunk}"/><path d="M-0.35 -0.12L0 -0.55L0.35 -0.12ZM-0.28 -0.38L0 -0.8L0.28 -0.38ZM-0.2 -0.62L0 -1L0.2 -0.62Z" fill="${c.leaf}"/>${snow}`
}

/** A broadleaf tree: a trunk under a crown of three circles. */
export function broadleaf(c: { leaf: string; trunk: string }) {
  return `<rect x="-0.06" y="-0.45" width="0.12" height="0.45" fill="${c.trunk}"/><g fill="${c.leaf}"><circle cx="0" cy="-0.68" r="0.3"/><circle cx="-0.2" cy="-0.52" r="0.22"/><circle cx="0.2" cy="-0.52" r="0.22"/></g>`
}

/** A sailing boat 1 wide: hull, mast, mainsail and jib. */
export function boat(c: { hull: string; mast: string; sail: string; jib: string }) {
  return `<path d="M-0.5 -0.15L0.5 -0.15L0.38 0L-0.38 0Z" fill="${c.hull}"/><path d="M0.02 -0.15V-1" stroke="${c.mast}" stroke-width="0.03"/><path d="M0.06 -0.95V-0.2H0.46Z" fill="${c.sail}"/><path d="M-0.02 -0.85V-0.2H-0.34Z" fill="${c.jib}"/>`
}

const PETALS = [0, 72, 144, 216, 288]
  .map(
    (a) => `<circle cx="${fmt3(0.17 * Math.cos((a * Math.PI) / 180))}" cy="${fmt3(-1 + 0.17 * Math.sin((a * Math.PI) / 180))}" r="0.16"/>`,
  )
  .join('')

/** A flower on its stem: five petals round a heart. */
export function flower(c: { stem: string; petal: string; heart: string }) {
  return `<path d="M0 0V-1" stroke="${c.stem}" stroke-width="0.06"/><g fill="${c.petal}">${PETALS}</g><circle cx="0" cy="-1" r="0.09" fill="${c.heart}"/>`
}

/** A rock 1.2 wide. */
export function rock(fill: string) {
  return `<path d="M-0.6 0L-0.45 -0.5L-0.1 -0.7L0.35 -0.55L0.6 0Z" fill="${fill}"/>`
}
