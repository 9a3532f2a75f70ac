// A monoline stroke font, written for the local model's captions: every glyph is SVG path data
// stroked with round caps and joins, so a caption is paths only. librsvg draws SVG <text> through
// fontconfig and Pango, and on a machine without fonts (a container, a fresh server) that comes
// out as empty boxes; paths look the same everywhere, need no font file, no licence and no
// dependency, and their even strokes survive 1-bit dithering better than hinted small text.
//
// Units: capitals are 10 high, the baseline is y = 10, the x-height y = 4, descenders reach
// y = 13; a glyph is [advance width, path data]. Letters with accents are drawn without them
// (NFD, marks dropped); any other character is drawn as an open box.
import { fmt } from './svg.js'

type Glyph = readonly [width: number, d: string]

/** Room between glyphs, and the width of a space, in font units. */
const TRACKING = 1.9
const SPACE = 3
/** From one line's baseline to the next, in font units. */
export const LINE_UNITS = 16

const MISSING: Glyph = [5, 'M0 2H5V10H0Z']

const GLYPHS: Record<string, Glyph> = {
  A: [6, 'M0 10L3 0L6 10M1.1 6.5H4.9'],
  B: [5.4, 'M0 10V0H2.8A2.3 2.5 0 0 1 2.8 5H0M2.8 5A2.6 2.5 0 0 1 2.8 10H0'],
  C: [5.5, 'M5.5 3A2.75 3 0 0 0 0 3V7A2.75 3 0 0 0 5.5 7'],
  D: [5.5, 'M0 0H2.5A3 3 0 0 1 5.5 3V7A3 3 0 0 1 2.5 10H0Z'],
  E: [5, 'M5 0H0V10H5M0 5H4'],
  F: [5, 'M5 0H0V10M0 5H4'],
  G: [5.5, 'M5.5 3A2.75 3 0 0 0 0 3V7A2.75 3 0 0 0 5.5 7V5.5H3'],
  H: [5.5, 'M0 0V10M5.5 0V10M0 5H5.5'],
  I: [3, 'M0 0H3M1.5 0V10M0 10H3'],
  J: [4.5, 'M4.5 0V7.5A2.25 2.5 0 0 1 0 7.5'],
  K: [5, 'M0 0V10M5 0L0 6M1.6 4.1L5 10'],
  L: [4.5, 'M0 0V10H4.5'],
  M: [7, 'M0 10V0L3.5 6L7 0V10'],
  N: [5.5, 'M0 10V0L5.5 10V0'],
  O: [6, 'M0 3A3 3 0 0 1 6 3V7A3 3 0 0 1 0 7Z'],
  P: [5, 'M0 10V0H2.5A2.5 2.5 0 0 1 2.5 5H0'],
  Q: [6, 'M0 3A3 3 0 0 1 6 3V7A3 3 0 0 1 0 7ZM3.6 7.4L6.2 10.4'],
  R: [5, 'M0 10V0H2.5A2.5 2.5 0 0 1 2.5 5H0M2.5 5L5 10'],
  S: [5, 'M4.67 1.25A2.5 2.5 0 1 0 2.5 5A2.5 2.5 0 1 1 0.33 8.75'],
  T: [6, 'M0 0H6M3 0V10'],
  U: [5.5, 'M0 0V7A2.75 3 0 0 0 5.5 7V0'],
  V: [6, 'M0 0L3 10L6 0'],
  W: [8, 'M0 0L2 10L4 3L6 10L8 0'],
  X: [5.5, 'M0 0L5.5 10M5.5 0L0 10'],
  Y: [6, 'M0 0L3 5L6 0M3 5V10'],
  Z: [5.5, 'M0 0H5.5L0 10H5.5'],
  a: [5, 'M5 4V10M5 6.5A2.5 2.5 0 0 0 0 6.5V7.5A2.5 2.5 0 0 0 5 7.5'],
  b: [5, 'M0 0V10M0 6.5A2.5 2.5 0 0 1 5 6.5V7.5A2.5 2.5 0 0 1 0 7.5'],
  c: [4.5, 'M4.2 5.25A2.25 2.5 0 0 0 0 6.5V7.5A2.25 2.5 0 0 0 4.2 8.75'],
  d: [5, 'M5 0V10M5 6.5A2.5 2.5 0 0 0 0 6.5V7.5A2.5 2.5 0 0 0 5 7.5'],
  e: [5, 'M0 7H5V6.5A2.5 2.5 0 0 0 0 6.5V7.5A2.5 2.5 0 0 0 4.55 8.93'],
  f: [3, 'M3.2 0H2.6A1.4 1.4 0 0 0 1.2 1.4V10M0 4H3'],
  g: [5, 'M5 6.5A2.5 2.5 0 0 0 0 6.5V7.5A2.5 2.5 0 0 0 5 7.5M5 4V11A2.5 2 0 0 1 0 11'],
  h: [5, 'M0 0V10M0 6.5A2.5 2.5 0 0 1 5 6.5V10'],
  i: [0, 'M0 4V10M0 1.8V1.9'],
  j: [2, 'M2 4V11.5A1.5 1.5 0 0 1 0.5 13H0M2 1.8V1.9'],
  k: [4.5, 'M0 0V10M4.5 4L0 8M1.6 6.6L4.5 10'],
  l: [1.2, 'M0 0V8.8A1.2 1.2 0 0 0 1.2 10'],
  m: [8, 'M0 4V10M0 6A2 2 0 0 1 4 6V10M4 6A2 2 0 0 1 8 6V10'],
  n: [5, 'M0 4V10M0 6.5A2.5 2.5 0 0 1 5 6.5V10'],
  o: [5, 'M0 6.5A2.5 2.5 0 0 1 5 6.5V7.5A2.5 2.5 0 0 1 0 7.5Z'],
  p: [5, 'M0 4V13M0 6.5A2.5 2.5 0 0 1 5 6.5V7.5A2.5 2.5 0 0 1 0 7.5'],
  q: [5, 'M5 4V13M5 6.5A2.5 2.5 0 0 0 0 6.5V7.5A2.5 2.5 0 0 0 5 7.5'],
  r: [3.5, 'M0 4V10M0 7A3 3 0 0 1 3 4H3.5'],
  s: [4.5, 'M4.2 4.75A2.25 1.5 0 1 0 2.25 7A2.25 1.5 0 1 1 0.3 9.25'],
  t: [3.5, 'M1.2 1.5V8.8A1.2 1.2 0 0 0 2.4 10H3.5M0 4H3.5'],
  u: [5, 'M0 4V7.5A2.5 2.5 0 0 0 5 7.5M5 4V10'],
  v: [5, 'M0 4L2.5 10L5 4'],
  w: [7, 'M0 4L1.75 10L3.5 5L5.25 10L7 4'],
  x: [4.5, 'M0 4L4.5 10M4.5 4L0 10'],
  y: [5, 'M0 4L2.5 10M5 4L1.25 13'],
  z: [4.5, 'M0 4H4.5L0 10H4.5'],
  '0': [5.5, 'M0 2.75A2.75 2.75 0 0 1 5.5 2.75V7.25A2.75 2.75 0 0 1 0 7.25ZM4.4 2L1.1 8'],
  '1': [4, 'M0 2L2 0V10M0 10H4'],
  '2': [5, 'M0 2.5A2.5 2.5 0 0 1 5 2.5C5 5 0 7 0 10H5'],
  '3': [5, 'M0.33 1.25A2.5 2.5 0 1 1 2.5 5A2.5 2.5 0 1 1 0.33 8.75'],
  '4': [5.5, 'M4 10V0L0 7H5.5'],
  '5': [5, 'M5 0H0.6L0.3 4.6A2.9 2.9 0 1 1 0.2 9.2'],
  '6': [5, 'M0 7.5A2.5 2.5 0 1 1 5 7.5A2.5 2.5 0 1 1 0 7.5C0 3 1.5 0 4.5 0'],
  '7': [5, 'M0 0H5L1.5 10'],
  '8': [5.2, 'M2.6 4.8A2.4 2.4 0 1 1 2.6 0A2.4 2.4 0 1 1 2.6 4.8A2.6 2.6 0 1 1 2.6 10A2.6 2.6 0 1 1 2.6 4.8'],
  '9': [5, 'M5 2.5A2.5 2.5 0 1 1 0 2.5A2.5 2.5 0 1 1 5 2.5C5 7 3.5 10 0.5 10'],
  '.': [0, 'M0 9.9V10'],
  ',': [0.8, 'M0.8 9.8L0 11.8'],
  '!': [0, 'M0 0V7M0 9.9V10'],
  '?': [5, 'M0 2.5A2.5 2.5 0 1 1 2.5 5V7M2.5 9.9V10'],
  ':': [0, 'M0 4.9V5M0 9.9V10'],
  ';': [0.8, 'M0.8 4.9V5M0.8 9.8L0 11.8'],
  '-': [3.5, 'M0 6H3.5'],
  "'": [0, 'M0 0V3'],
  '"': [1.6, 'M0 0V3M1.6 0V3'],
  '(': [2, 'M2 -0.5Q-0.5 5 2 10.5'],
  ')': [2, 'M0 -0.5Q2.5 5 0 10.5'],
  '[': [2, 'M2 -0.5H0V10.5H2'],
  ']': [2, 'M0 -0.5H2V10.5H0'],
  '/': [4, 'M0 10.5L4 -0.5'],
  '&': [5.5, 'M5.5 10L1.3 3.9A1.9 1.9 0 1 1 3.5 3.9L1 6.2A2.2 2.2 0 0 0 2.9 10Q4.5 10 5.4 7'],
  '+': [4.4, 'M0 6H4.4M2.2 3.8V8.2'],
  '=': [4.4, 'M0 4.9H4.4M0 7.4H4.4'],
  '#': [5.2, 'M2 1.5L1.2 9.5M4.2 1.5L3.4 9.5M0 4.2H5.2M0 7H5.2'],
  '%': [5.5, 'M5.5 0L0 10M1.3 0.3A1.3 1.3 0 1 1 1.3 2.9A1.3 1.3 0 1 1 1.3 0.3M4.2 7.1A1.3 1.3 0 1 1 4.2 9.7A1.3 1.3 0 1 1 4.2 7.1'],
  '*': [4, 'M2 1V6M0 2.2L4 4.8M4 2.2L0 4.8'],
  '<': [4, 'M4 3L0 6.5L4 10'],
  '>': [4, 'M0 3L4 6.5L0 10'],
  _: [5, 'M0 11.5H5'],
  '…': [6, 'M0 9.9V10M3 9.9V10M6 9.9V10'],
}

/** Typographic quotes and dashes drawn as their plain forms. */
const ALIASES: Record<string, string> = { '‘': "'", '’': "'", '“': '"', '”': '"', '–': '-', '—': '-', '×': 'x' }

/** The text as the glyph table can draw it: accents dropped, runs of white space made one. */
export function normaliseCaption(text: string): string {
  return text.normalize('NFD').replace(/\p{M}/gu, '').replace(/\s+/g, ' ').trim()
}

export function hasGlyph(char: string): boolean {
  return char in GLYPHS || char in ALIASES || char === ' '
}

function glyphOf(char: string): Glyph | undefined {
  if (char === ' ') return undefined
  return GLYPHS[ALIASES[char] ?? char] ?? MISSING
}

/** Advance width of a text in font units, without tracking after the last glyph. */
export function textUnits(text: string): number {
  let units = 0
  for (const char of text) units += char === ' ' ? SPACE : (glyphOf(char)?.[0] ?? 0) + TRACKING
  return Math.max(0, units - (text.endsWith(' ') ? 0 : TRACKING))
}

/**
 * Greedy wrapping at spaces into at most `maxLines` lines of `maxUnits`; a word longer than a
 * line is broken where it overflows. What does not fit ends the last line with an ellipsis.
 */
export function wrapCaption(text: string, maxUnits: number, maxLines: number): string[] {
  const lines: string[] = []
  let line = ''
  const words = normaliseCaption(text).split(' ').filter(Boolean)
  let i = 0
  while (i < words.length && lines.length < maxLines) {
    const word = words[i] as string
    const joined = line ? `${line} ${word}` : word
    if (textUnits(joined) <= maxUnits) {
      line = joined
      i++
      continue
    }
    if (line) {
      lines.push(line)
      line = ''
      continue
    }
    // A word wider than a whole line: as much of it as fits, the rest carried to the next line.
    let cut = 1
    const chars = [...word]
    while (cut < chars.length && textUnits(chars.slice(0, cut + 1).join('')) <= maxUnits) cut++
    lines.push(chars.slice(0, cut).join(''))
    words[i] = chars.slice(cut).join('')
  }
  if (line && lines.length < maxLines) {
    lines.push(line)
    line = ''
  }
  if (i < words.length || line) {
    // Truncated: shorten the last line until it and the ellipsis fit.
    let last = [...(lines.pop() ?? '')]
    while (last.length > 0 && textUnits(`${last.join('').trimEnd()}…`) > maxUnits) last = last.slice(0, -1)
    lines.push(`${last.join('').trimEnd()}…`)
  }
  return lines
}

/** One line of text as stroked paths, its left end at x and its baseline at y (pixels), `scale` pixels a unit. */
export function strokeText(text: string, x: number, y: number, scale: number): string {
  const paths: string[] = []
  let pen = 0
  for (const char of text) {
    const glyph = glyphOf(char)
    if (!glyph) {
      pen += SPACE
      continue
    }
    paths.push(`<path transform="translate(${fmt(pen)} 0)" d="${glyph[1]}"/>`)
    pen += glyph[0] + TRACKING
  }
  return `<g transform="translate(${fmt(x)} ${fmt(y - 10 * scale)}) scale(${fmt(scale)})">${paths.join('')}</g>`
}
