// Composes the local model's picture from what it read in the prompt, back to front: the sky
// coloured by the time of day, sun or moon and stars, clouds and birds, mountains, far hills, a
// town on the horizon, the sea with boats, the land (a headland when there is sea) with rocks, a
// lighthouse, houses, animals, trees and flowers, then rain or snow. Every element draws from its
// own seeded stream (see randomFor): the seed arranges the picture, the prompt decides what is in it.
import * as figure from './figures.js'
import type { Reading, Season, Subject, TimeOfDay } from './prompt-words.js'
import { fmt, hex, mix, type Random, randomFor, type Rgb, rgb } from './svg.js'

type Box = { x: number; y: number; width: number; height: number }
/** Where a drawn subject ended up, in pixels (for things strewn about, the region they are strewn over). */
export type Placed = { subject: Subject; box: Box }
type Scene = { svg: string; placed: Placed[] }

type Sky = { top: string; horizon: string; sun: string; water: string; deep: string }
const SKIES: Record<TimeOfDay, Sky> = {
  day: { top: '#4f9fe6', horizon: '#d4ecfa', sun: '#ffd740', water: '#3a86c8', deep: '#1f5d99' },
  dawn: { top: '#3f4f92', horizon: '#f9b8a0', sun: '#ffc46b', water: '#6d83b8', deep: '#3b4f86' },
  dusk: { top: '#26296a', horizon: '#ee7a45', sun: '#ffc25e', water: '#4a5690', deep: '#1f2752' },
  night: { top: '#070b24', horizon: '#23305d', sun: '#f4f1da', water: '#132245', deep: '#0a1430' },
}
/** How much daylight falls on the land and what stands on it; the rest is night blue. */
const LIGHT: Record<TimeOfDay, number> = { day: 1, dawn: 0.85, dusk: 0.7, night: 0.4 }
const NIGHT = rgb('#0b1030')
const OVERCAST = rgb('#8a93a0')
const GROUND: Record<Season | 'desert', string> = {
  spring: '#8fcf6a',
  summer: '#74b350',
  autumn: '#b39a4c',
  winter: '#eef2f6',
  desert: '#e3c27a',
}
const FOLIAGE: Record<Season, readonly string[]> = {
  spring: ['#5fb85a', '#74c46a'],
  summer: ['#3f8f3f', '#4c9a3a'],
  autumn: ['#d9772b', '#c2452d', '#e0a526'],
  winter: ['#2f5d46'],
}
const LAMP = '#fff2a8'
const WINDOW_LIT = '#ffd76a'
const LAND_SUBJECTS: readonly Subject[] = ['lighthouse', 'house', 'tree', 'forest', 'cat', 'dog', 'flower', 'rock']

/** Where something stands: its foot, and its size relative to one standing at the front. */
type Spot = { x: number; y: number; scale: number }

/** The strip of land things stand on, from the horizon (depth 0) to the front (depth 1), and the spans taken. */
class Ground {
  private readonly taken: Array<[number, number]> = []
  constructor(
    readonly x0: number,
    readonly x1: number,
    readonly far: number,
    readonly near: number,
  ) {}

  private free(a: number, b: number) {
    return this.taken.every(([c, d]) => b <= c || a >= d)
  }

  /**
   * A spot for something `halfWidth` wide at the front, between depths lo and hi, clear of the
   * spans taken if one of a dozen tries is; `claim` takes its span, so what comes later keeps clear.
   */
  spot(r: Random, halfWidth: number, lo: number, hi: number, claim: boolean): Spot {
    let spot: Spot = { x: this.x0, y: this.far, scale: 1 }
    for (let i = 0; i < 12; i++) {
      const depth = r.between(lo, hi)
      const scale = 0.55 + 0.45 * depth
      const half = halfWidth * scale
      spot = { x: r.between(this.x0 + half, Math.max(this.x0 + half, this.x1 - half)), y: this.far + (this.near - this.far) * depth, scale }
      if (this.free(spot.x - half, spot.x + half)) break
    }
    if (claim) this.claim(spot.x - halfWidth * spot.scale, spot.x + halfWidth * spot.scale)
    return spot
  }

  claim(a: number, b: number) {
    this.taken.push([a, b])
  }
}

/** Everything the layers share: the size, what was read, the light and the layout. */
type Canvas = {
  W: number
  H: number
  /** The shorter side: figures are sized by it, so portrait and landscape pictures look alike. */
  u: number
  seed: number
  has: (s: Subject) => boolean
  many: (s: Subject) => boolean
  time: TimeOfDay
  season: Season
  sky: Sky
  /** A colour as the time of day lights it. */
  lit: (c: string) => string
  /** A sky or sea colour, greyed under rain or cloud. */
  weathered: (c: string) => string
  horizon: number
  water: boolean
  /** A headland on one side, when there is sea and something to stand on land. */
  coast: boolean
  coastLeft: boolean
  coastEdge: number
  landTop: number
  groundColour: string
  placed: Placed[]
}

/** x measured from the headland's own side of the picture. */
const fromCoast = (c: Canvas, x: number) => (c.coastLeft ? x : c.W - x)
const circle = (x: number, y: number, r: number, attrs: string) => `<circle cx="${fmt(x)}" cy="${fmt(y)}" r="${fmt(r)}" ${attrs}/>`
const isDark = (time: TimeOfDay) => time === 'night' || time === 'dusk'

export function drawScene(reading: Reading, width: number, height: number, seed: number): Scene {
  const has = (s: Subject) => reading.subjects.has(s)
  // Drawn in full and in this order whatever the prompt names, so that naming a time or a subject
  // does not move the horizon or the coast. Unnamed, the time of day and the season are the
  // seed's: prompts that name nothing this model knows still differ in more than where the sun
  // stands. Winter and night only when asked for.
  const layout = randomFor(seed, 'layout')
  const someTime = layout.pick(['day', 'day', 'dawn', 'dusk'] as const)
  const someSeason = layout.pick(['spring', 'summer', 'summer', 'autumn'] as const)
  const horizonShift = layout.between(-0.04, 0.04)
  const coastLeft = layout.next() < 0.5
  const coastEdge = width * layout.between(0.42, 0.55)

  const time: TimeOfDay = reading.time ?? (has('moon') || has('stars') ? 'night' : has('sun') ? 'day' : someTime)
  const season: Season = has('snow') ? 'winter' : (reading.season ?? someSeason)
  const light = LIGHT[time]
  const lit = (c: string) => hex(mix(rgb(c), NIGHT, 1 - light))
  const overcast = has('rain') ? 0.55 : has('cloud') ? 0.2 : 0
  const greyed: Rgb = mix(OVERCAST, NIGHT, 1 - light)
  const water = has('water')
  const coast = water && LAND_SUBJECTS.some(has)
  const horizon = height * ((water ? 0.55 : has('mountain') ? 0.64 : 0.6) + horizonShift)
  const c: Canvas = {
    W: width,
    H: height,
    u: Math.min(width, height),
    seed,
    has,
    many: (s) => reading.plural.has(s),
    time,
    season,
    sky: SKIES[time],
    lit,
    weathered: (colour) => hex(mix(rgb(colour), greyed, overcast)),
    horizon,
    water,
    coast,
    coastLeft,
    coastEdge,
    landTop: coast ? horizon + (height - horizon) * 0.22 : horizon,
    groundColour: lit(has('desert') ? GROUND.desert : GROUND[season]),
    placed: [],
  }
  const celestial = sunOrMoon(c)
  const ground = land(c)
  const svg = [
    skyLayer(c),
    stars(c),
    celestial.svg,
    clouds(c),
    birds(c),
    mountains(c),
    hills(c),
    city(c),
    sea(c, celestial.x),
    boats(c),
    ground.svg,
    rocks(c),
    standing(c, ground.ground),
    weather(c),
  ].join('')
  return { svg, placed: c.placed }
}

function skyLayer(c: Canvas): string {
  return `<defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${c.weathered(c.sky.top)}"/><stop offset="1" stop-color="${c.weathered(c.sky.horizon)}"/></linearGradient><linearGradient id="sea" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${c.weathered(c.sky.water)}"/><stop offset="1" stop-color="${c.weathered(c.sky.deep)}"/></linearGradient></defs><rect width="${c.W}" height="${fmt(c.horizon + 1)}" fill="url(#sky)"/>`
}

function stars(c: Canvas): string {
  if ((c.time !== 'night' && !c.has('stars')) || c.has('rain')) return ''
  const r = randomFor(c.seed, 'stars')
  const dots: string[] = []
  for (let i = 0; i < Math.min(220, Math.round((c.W * c.horizon) / 2200)); i++)
    dots.push(
      circle(
        r.between(0, c.W),
        r.between(0, c.horizon * 0.85),
        r.between(0.5, 1.3) * Math.max(1, c.u / 400),
        `fill-opacity="${fmt(r.between(0.5, 1))}"`,
      ),
    )
  return `<g fill="${c.time === 'night' ? '#ffffff' : '#fffbe0'}">${dots.join('')}</g>`
}

/** The sun by day (low and large at dawn and dusk), the moon at night or when named; x is where its light falls on the sea. */
function sunOrMoon(c: Canvas): { svg: string; x?: number } {
  const { time, has, u, W, horizon } = c
  if (time !== 'night' && (has('sun') || (!has('rain') && !has('moon')))) {
    const r = randomFor(c.seed, 'sun')
    const low = time !== 'day'
    const radius = u * (low ? 0.11 : 0.07)
    const x = W * r.between(0.15, 0.85)
    // Low suns rise and set behind mountains, not below them.
    const y = low ? horizon - (has('mountain') ? c.H * 0.3 : radius * 0.35) : horizon * r.between(0.2, 0.4)
    c.placed.push({ subject: 'sun', box: { x: x - radius, y: y - radius, width: 2 * radius, height: 2 * radius } })
    // By day a white haze (the sun's yellow over blue would make a grey ring), low down its own colour.
    const haze = low ? `fill="${c.sky.sun}" fill-opacity="0.22"` : 'fill="#ffffff" fill-opacity="0.3"'
    return { svg: circle(x, y, radius * 1.8, haze) + circle(x, y, radius, `fill="${c.sky.sun}"`), x }
  }
  if (!has('moon') && (time !== 'night' || has('rain'))) return { svg: '' }
  const r = randomFor(c.seed, 'moon')
  const radius = u * 0.06
  const x = W * r.between(0.15, 0.85)
  const y = horizon * r.between(0.18, 0.4)
  const night = time === 'night'
  c.placed.push({ subject: 'moon', box: { x: x - radius, y: y - radius, width: 2 * radius, height: 2 * radius } })
  const colour = night ? '#f4f1da' : '#ffffff'
  return {
    svg:
      circle(x, y, radius * 1.7, `fill="${colour}" fill-opacity="0.12"`) +
      circle(x, y, radius, `fill="${colour}" fill-opacity="${night ? 1 : 0.75}"`) +
      figure.place(x, y, radius, figure.CRATERS),
    x: night ? x : undefined,
  }
}

/** A few clouds when named, a heavy grey sky for rain, now and then one on a clear day. */
function clouds(c: Canvas): string {
  const r = randomFor(c.seed, 'clouds')
  const rain = c.has('rain')
  const count = rain ? 7 : c.has('cloud') ? r.int(3, 6) : c.time === 'night' ? 0 : r.int(0, 3)
  const colour = rain ? c.lit('#9aa3ae') : { day: '#ffffff', dawn: '#f8d0c0', dusk: '#d9929a', night: '#3a4470' }[c.time]
  const shapes: string[] = []
  for (let i = 0; i < count; i++) {
    const size = c.W * r.between(0.18, rain ? 0.45 : 0.32)
    shapes.push(figure.place(r.between(0, c.W), r.between(0.12, 0.6) * c.horizon, size, figure.CLOUD, r.next() < 0.5))
  }
  return `<g fill="${colour}">${shapes.join('')}</g>`
}

function birds(c: Canvas): string {
  if (!c.has('bird')) return ''
  const r = randomFor(c.seed, 'birds')
  const count = c.many('bird') ? r.int(4, 8) : 1
  const x0 = c.W * r.between(0.2, 0.8)
  const y0 = c.horizon * r.between(0.15, 0.45)
  const paths: string[] = []
  for (let i = 0; i < count; i++) {
    const s = c.u * r.between(0.025, 0.045) * (count === 1 ? 1.4 : 1)
    const x = count === 1 ? x0 : x0 + r.between(-0.2, 0.2) * c.W
    const y = count === 1 ? y0 : y0 + r.between(-0.12, 0.12) * c.horizon
    paths.push(
      `<path d="M${fmt(x - s)} ${fmt(y - s * 0.2)}Q${fmt(x - s * 0.5)} ${fmt(y - s * 0.6)} ${fmt(x)} ${fmt(y)}Q${fmt(x + s * 0.5)} ${fmt(y - s * 0.6)} ${fmt(x + s)} ${fmt(y - s * 0.2)}" stroke-width="${fmt(Math.max(1, s * 0.16))}"/>`,
    )
  }
  c.placed.push({ subject: 'bird', box: { x: 0, y: 0, width: c.W, height: c.horizon } })
  return `<g fill="none" stroke="${c.time === 'night' ? '#c8cde0' : '#2a2d38'}" stroke-linecap="round">${paths.join('')}</g>`
}

/** Two ranges, the far one paler towards the sky, every peak snow-capped. */
function mountains(c: Canvas): string {
  if (!c.has('mountain')) return ''
  const r = randomFor(c.seed, 'mountains')
  const { W, H, horizon } = c
  const out: string[] = []
  const ranges = [
    { colour: hex(mix(rgb(c.lit('#6f7d99')), rgb(c.sky.horizon), 0.35)), rise: 0.42, peaks: r.int(3, 5) },
    { colour: c.lit('#4f5d78'), rise: 0.26, peaks: r.int(2, 4) },
  ]
  for (const range of ranges) {
    const points: string[] = [`0,${fmt(horizon)}`]
    const caps: string[] = []
    const step = W / range.peaks
    for (let i = 0; i < range.peaks; i++) {
      const px = step * (i + r.between(0.25, 0.75))
      const top = horizon - H * range.rise * r.between(0.55, 1)
      points.push(`${fmt(px)},${fmt(top)}`, `${fmt(step * (i + 1))},${fmt(horizon - H * range.rise * r.between(0.05, 0.25))}`)
      // The cap reaches a quarter of the way down, with a ragged lower edge.
      const drop = (horizon - top) * 0.25
      const half = drop * 0.9
      caps.push(
        `<path d="M${fmt(px)} ${fmt(top)}L${fmt(px + half)} ${fmt(top + drop)}L${fmt(px + half * 0.4)} ${fmt(top + drop * 0.75)}L${fmt(px)} ${fmt(top + drop)}L${fmt(px - half * 0.5)} ${fmt(top + drop * 0.7)}L${fmt(px - half)} ${fmt(top + drop)}Z"/>`,
      )
    }
    points.push(`${W},${fmt(horizon)}`)
    out.push(`<polygon points="${points.join(' ')}" fill="${range.colour}"/><g fill="${c.lit('#f4f6fa')}">${caps.join('')}</g>`)
  }
  c.placed.push({ subject: 'mountain', box: { x: 0, y: horizon - H * 0.42, width: W, height: H * 0.42 } })
  return out.join('')
}

/** Far hills along a land horizon, in the ground's colour softened towards the sky. */
function hills(c: Canvas): string {
  if (c.water) return ''
  const r = randomFor(c.seed, 'hills')
  let d = `M0 ${fmt(c.horizon)}`
  const n = r.int(3, 6)
  for (let i = 0; i < n; i++)
    d += `Q${fmt(((i + 0.5) / n) * c.W)} ${fmt(c.horizon - c.H * r.between(0.03, 0.1))} ${fmt(((i + 1) / n) * c.W)} ${fmt(c.horizon)}`
  return `<path d="${d}Z" fill="${hex(mix(rgb(c.groundColour), rgb(c.weathered(c.sky.horizon)), 0.35))}"/>`
}

/** A skyline on the horizon; its windows lit at dusk and night, in rows drawn as dashed lines (one element a row, not one a window). */
function city(c: Canvas): string {
  if (!c.has('city')) return ''
  const r = randomFor(c.seed, 'city')
  const { W, H, u, horizon } = c
  const buildings: string[] = []
  const windows: string[] = []
  let x = W * r.between(c.water ? 0.3 : 0.05, 0.4)
  const end = Math.min(W, x + W * r.between(0.35, 0.6))
  const pane = Math.max(2, u * 0.012)
  while (x < end) {
    const bw = u * r.between(0.05, 0.11)
    const bh = H * r.between(0.1, 0.3)
    buildings.push(`<rect x="${fmt(x)}" y="${fmt(horizon - bh)}" width="${fmt(bw)}" height="${fmt(bh + 1)}"/>`)
    for (let wy = horizon - bh + pane * 2; wy < horizon - pane * 2; wy += pane * 2.5)
      if (!isDark(c.time) || r.next() < 0.55)
        windows.push(
          `<line x1="${fmt(x + pane)}" y1="${fmt(wy)}" x2="${fmt(x + bw - pane)}" y2="${fmt(wy)}" stroke-dasharray="${fmt(pane)} ${fmt(pane * r.between(0.8, 2.5))}"/>`,
        )
    x += bw + u * r.between(0, 0.015)
  }
  c.placed.push({ subject: 'city', box: { x: 0, y: horizon - H * 0.3, width: W, height: H * 0.3 } })
  const windowColour = isDark(c.time) ? WINDOW_LIT : c.lit('#b7cde0')
  return `<g fill="${c.lit('#5a6478')}">${buildings.join('')}</g><g stroke="${windowColour}" stroke-width="${fmt(pane)}">${windows.join('')}</g>`
}

/** The sea below the horizon, a few wave lines, and the sun's or moon's light on it below `lightX`. */
function sea(c: Canvas, lightX: number | undefined): string {
  if (!c.water) return ''
  const r = randomFor(c.seed, 'sea')
  const { W, H, u, horizon } = c
  const waves: string[] = []
  const stroke = Math.max(1, u / 300)
  for (let i = 0; i < Math.round(W / 25); i++) {
    const y = horizon + (H - horizon) * r.next() ** 1.5
    const len = u * r.between(0.02, 0.06) * (0.4 + (y - horizon) / (H - horizon))
    const x = r.between(0, W)
    waves.push(`<line x1="${fmt(x)}" y1="${fmt(y)}" x2="${fmt(x + len)}" y2="${fmt(y)}"/>`)
  }
  let out = `<rect y="${fmt(horizon)}" width="${W}" height="${fmt(H - horizon)}" fill="url(#sea)"/><g stroke="${c.weathered(c.sky.horizon)}" stroke-opacity="0.45" stroke-width="${fmt(stroke)}">${waves.join('')}</g>`
  if (lightX !== undefined) {
    const glints: string[] = []
    for (let y = horizon + stroke * 2; y < H; y += stroke * 4) {
      const spread = u * 0.03 * (1 + (3 * (y - horizon)) / (H - horizon))
      const x = lightX + r.between(-0.5, 0.5) * spread
      glints.push(
        `<line x1="${fmt(x - spread * r.between(0.3, 1))}" y1="${fmt(y)}" x2="${fmt(x + spread * r.between(0.3, 1))}" y2="${fmt(y)}"/>`,
      )
    }
    out += `<g stroke="${c.sky.sun}" stroke-opacity="0.6" stroke-width="${fmt(stroke * 1.5)}">${glints.join('')}</g>`
  }
  return out
}

/** Boats out on the open water, away from the headland. */
function boats(c: Canvas): string {
  if (!c.has('boat')) return ''
  const r = randomFor(c.seed, 'boats')
  const { W, H, u, horizon } = c
  const count = c.many('boat') ? r.int(2, 4) : 1
  const x0 = c.coast && c.coastLeft ? c.coastEdge * 1.15 : 0
  const x1 = c.coast && !c.coastLeft ? W - c.coastEdge * 1.15 : W
  const water = new Ground(x0, x1, horizon + (H - horizon) * 0.1, H * 0.92)
  const drawn: Array<{ y: number; svg: string }> = []
  for (let i = 0; i < count; i++) {
    const spot = water.spot(r, u * 0.11, 0, 0.7, true)
    const s = u * 0.22 * spot.scale
    const colours = {
      hull: c.lit(r.pick(['#7a3b2a', '#2f4f6f', '#3f3f46'])),
      mast: c.lit('#3a3030'),
      sail: c.lit('#fbf8f0'),
      jib: c.lit('#e6e0d0'),
    }
    drawn.push({ y: spot.y, svg: figure.place(spot.x, spot.y, s, figure.boat(colours), r.next() < 0.5) })
    c.placed.push({ subject: 'boat', box: { x: spot.x - s / 2, y: spot.y - s, width: s, height: s } })
  }
  return drawn
    .sort((a, b) => a.y - b.y)
    .map((b) => b.svg)
    .join('')
}

/** The land: a headland on one side when there is sea, the whole foreground otherwise; and where things stand on it. */
function land(c: Canvas): { svg: string; ground: Ground } {
  const { W, H, u, horizon, landTop } = c
  if (c.coast) {
    const r = randomFor(c.seed, 'coast')
    const e = c.coastEdge
    const points: Array<[number, number]> = [
      [0, landTop - H * 0.01],
      [e * 0.8, landTop],
      [e * r.between(0.9, 0.97), landTop + (H - landTop) * 0.35],
      [e, landTop + (H - landTop) * 0.6],
      [e * 1.12, H],
      [0, H],
    ]
    // Outlined: on a 1-bit display land and sea can dither to the same grey.
    const edge = hex(mix(rgb(c.groundColour), NIGHT, 0.45))
    const svg = `<polygon points="${points.map(([x, y]) => `${fmt(fromCoast(c, x))},${fmt(y)}`).join(' ')}" fill="${c.groundColour}" stroke="${edge}" stroke-width="${fmt(Math.max(1, u / 250))}"/>`
    const [a, b] = [fromCoast(c, W * 0.03), fromCoast(c, e * 0.8)]
    return { svg, ground: new Ground(Math.min(a, b), Math.max(a, b), landTop, H * 0.97) }
  }
  const ground = new Ground(0, W, horizon, H * 0.97)
  if (c.water) return { svg: '', ground }
  const r = randomFor(c.seed, 'land')
  // A gentle rise in the foreground, a shade lighter.
  const y0 = H * r.between(0.8, 0.9)
  const y1 = H * r.between(0.8, 0.9)
  let svg = `<rect y="${fmt(horizon)}" width="${W}" height="${fmt(H - horizon)}" fill="${c.groundColour}"/><path d="M0 ${fmt(y0)}Q${fmt(W * r.between(0.3, 0.7))} ${fmt(Math.min(y0, y1) - H * 0.08)} ${W} ${fmt(y1)}V${H}H0Z" fill="${hex(mix(rgb(c.groundColour), [255, 255, 255], 0.12))}"/>`
  if (c.has('desert')) {
    const dunes: string[] = []
    for (let i = 0; i < 3; i++)
      dunes.push(
        `<path d="M${fmt(r.between(-0.2, 0.5) * W)} ${fmt(horizon + (H - horizon) * r.between(0.15, 0.6))}q${fmt(W * 0.2)} ${fmt(-H * 0.05)} ${fmt(W * 0.45)} 0"/>`,
      )
    svg += `<g fill="none" stroke="${c.lit('#c9a35e')}" stroke-width="${fmt(Math.max(1, u / 150))}">${dunes.join('')}</g>`
  }
  return { svg, ground }
}

/** Rocks along the headland's foot in the water, or strewn over the land. */
function rocks(c: Canvas): string {
  if (!c.has('rock')) return ''
  const r = randomFor(c.seed, 'rocks')
  const out: string[] = []
  for (let i = r.int(3, 6); i > 0; i--) {
    const x = c.coast ? fromCoast(c, c.coastEdge * r.between(0.85, 1.2)) : r.between(0, c.W)
    const y = c.coast ? c.landTop + (c.H - c.landTop) * r.between(0.35, 1) : c.horizon + (c.H - c.horizon) * r.between(0.2, 1)
    out.push(figure.place(x, y, c.u * r.between(0.04, 0.09), figure.rock(c.lit(r.pick(['#6e6a66', '#5d5a58', '#7d7770'])))))
  }
  return out.join('')
}

/**
 * What stands on the land, drawn far to near. The lighthouse, houses and animals claim their
 * ground first, so the trees and flowers placed after them keep out of their way.
 */
function standing(c: Canvas, ground: Ground): string {
  const { u, lit, time } = c
  const drawn: Array<{ y: number; svg: string }> = []
  const stand = (spot: Spot, size: number, body: string, flip = false) =>
    drawn.push({ y: spot.y, svg: figure.place(spot.x, spot.y, size * spot.scale, body, flip) })

  if (c.has('lighthouse')) {
    const r = randomFor(c.seed, 'lighthouse')
    const size = c.coast ? Math.min(c.H * 0.55, u * 0.7, c.landTop * 0.85) : Math.min(c.H * 0.45, u * 0.6)
    const spot: Spot = c.coast
      ? { x: fromCoast(c, c.coastEdge * r.between(0.55, 0.7)), y: c.landTop + c.H * 0.01, scale: 1 }
      : ground.spot(r, size * 0.12, 0.1, 0.3, false)
    ground.claim(spot.x - size * 0.15, spot.x + size * 0.15)
    const beaming = time !== 'day'
    const colours = {
      wall: lit('#f4f1ea'),
      band: lit('#c8352b'),
      dark: lit('#2f3440'),
      roof: lit('#8e2a22'),
      door: lit('#3b2f2a'),
      lamp: beaming ? LAMP : lit('#cfe3ee'),
      beam: beaming ? LAMP : undefined,
    }
    stand(spot, size, figure.lighthouse(colours))
    const h = size * spot.scale
    const w = figure.LIGHTHOUSE_WIDTH * h
    c.placed.push({ subject: 'lighthouse', box: { x: spot.x - w / 2, y: spot.y - h, width: w, height: h } })
  }

  if (c.has('house')) {
    const r = randomFor(c.seed, 'houses')
    const count = c.many('house') ? r.int(2, 4) : 1
    const size = u * (count === 1 ? 0.26 : 0.2)
    for (let i = 0; i < count; i++) {
      const spot = ground.spot(r, size * 0.6, 0.1, 0.55, true)
      const colours = {
        wall: lit(r.pick(['#e8d9b5', '#d9a27a', '#f1efe9', '#c8d6e0'])),
        roof: lit(r.pick(['#a63d2e', '#5b4a3f', '#3f5f7a'])),
        door: lit('#5a3b28'),
        pane: isDark(time) ? WINDOW_LIT : lit('#9cc3e0'),
      }
      stand(spot, size, figure.house(colours))
      const h = size * spot.scale
      c.placed.push({ subject: 'house', box: { x: spot.x - 0.6 * h, y: spot.y - h, width: 1.2 * h, height: h } })
    }
  }

  for (const animal of ['cat', 'dog'] as const) {
    if (!c.has(animal)) continue
    const r = randomFor(c.seed, animal)
    const size = u * (animal === 'cat' ? 0.2 : 0.22)
    const spot = ground.spot(r, size * 0.7, 0.7, 0.95, true)
    const flip = r.next() < 0.5
    if (animal === 'cat') stand(spot, size, figure.cat(lit(r.pick(['#2b2b2b', '#e08a3c', '#8a8a8a']))), flip)
    else {
      const coat = r.pick(['#8b5a2b', '#d9b382', '#2e2e2e', '#f0ebe0'])
      stand(spot, size, figure.dog(lit(coat), lit(hex(mix(rgb(coat), [0, 0, 0], 0.4)))), flip)
    }
    const h = size * spot.scale
    const [left, right, top] = figure.EXTENT[animal]
    const [l, rt] = flip ? [-right, -left] : [left, right]
    c.placed.push({ subject: animal, box: { x: spot.x + l * h, y: spot.y - top * h, width: (rt - l) * h, height: top * h } })
  }

  if (c.has('tree') || c.has('forest')) {
    const r = randomFor(c.seed, 'trees')
    const forest = c.has('forest')
    const count = forest ? Math.round((ground.x1 - ground.x0) / (u * 0.06)) : c.many('tree') ? r.int(3, 6) : 1
    const pines = c.season === 'winter' || c.has('mountain') || (forest && r.next() < 0.5)
    for (let i = 0; i < count; i++) {
      const size = u * (count === 1 ? 0.45 : r.between(0.24, 0.4))
      const spot = ground.spot(r, size * 0.3, 0, count === 1 ? 0.5 : 0.8, false)
      const colours = { leaf: lit(r.pick(FOLIAGE[c.season])), trunk: lit('#6b4a2f') }
      stand(
        spot,
        size,
        pines ? figure.pine({ ...colours, snow: c.season === 'winter' ? lit('#f4f6fa') : undefined }) : figure.broadleaf(colours),
      )
    }
    c.placed.push({
      subject: forest ? 'forest' : 'tree',
      box: { x: ground.x0, y: c.horizon - u * 0.45, width: ground.x1 - ground.x0, height: c.H },
    })
  }

  if (c.has('flower')) {
    const r = randomFor(c.seed, 'flowers')
    for (let i = Math.round((ground.x1 - ground.x0) / (u * 0.05)); i > 0; i--) {
      const size = u * r.between(0.06, 0.1)
      const spot = ground.spot(r, size * 0.3, 0.75, 1, false)
      const colours = {
        stem: lit('#3f7f35'),
        petal: lit(r.pick(['#e2423b', '#f2c12e', '#e67bb0', '#9b6fd6', '#ffffff'])),
        heart: lit('#f6d743'),
      }
      stand(spot, size, figure.flower(colours))
    }
    c.placed.push({ subject: 'flower', box: { x: ground.x0, y: c.H * 0.7, width: ground.x1 - ground.x0, height: c.H * 0.3 } })
  }

  return drawn
    .sort((a, b) => a.y - b.y)
    .map((d) => d.svg)
    .join('')
}

/** Rain or falling snow over everything. */
function weather(c: Canvas): string {
  const { W, H, u } = c
  let out = ''
  if (c.has('rain')) {
    const r = randomFor(c.seed, 'rain')
    const len = u * 0.04
    let d = ''
    for (let i = Math.min(400, Math.round((W * H) / 2500)); i > 0; i--)
      d += `M${fmt(r.between(0, W))} ${fmt(r.between(0, H))}l${fmt(-len * 0.25)} ${fmt(len)}`
    out += `<path d="${d}" stroke="${c.lit('#c3d0e2')}" stroke-opacity="0.6" stroke-width="${fmt(Math.max(1, u / 450))}"/>`
  }
  if (c.has('snow')) {
    const r = randomFor(c.seed, 'snow')
    const flakes: string[] = []
    for (let i = Math.min(400, Math.round((W * H) / 2000)); i > 0; i--)
      flakes.push(circle(r.between(0, W), r.between(0, H), u * r.between(0.003, 0.008), ''))
    out += `<g fill="#ffffff" fill-opacity="0.85">${flakes.join('')}</g>`
  }
  return out
}
