// The local model's picture: the scene it reads from the prompt (scene.ts), with the prompt as a
// caption drawn in a stroke font of our own (stroke-font.ts), rendered to PNG by sharp (librsvg).
// Nothing in the SVG is text, so no font is looked up: the picture is the same on every machine.
import { loadSharp } from '../../images/sharp.js'
import type { GenerationInput } from '../provider.js'
import { readPrompt } from './prompt-words.js'
import { drawScene, type Placed } from './scene.js'
import { LINE_UNITS, strokeText, textUnits, wrapCaption } from './stroke-font.js'
import { fmt } from './svg.js'

type LocalInput = Pick<GenerationInput, 'prompt' | 'negativePrompt' | 'width' | 'height' | 'seed'>

/** At most this share of the picture's height goes to the caption, and at most this many lines. */
const CAPTION_SHARE = 0.25
const CAPTION_LINES = 3
const STROKE_UNITS = 1.2

export type CaptionLayout = { lines: string[]; scale: number; height: number }

/**
 * The caption's lines and size: scaled with the picture (8 px capitals at the least), wrapped at
 * spaces, cut with an ellipsis past three lines or a quarter of the height. A picture too small
 * for one legible line gets none.
 */
export function captionLayout(text: string, width: number, height: number): CaptionLayout {
  const scale = Math.min(4, Math.max(0.8, Math.min(width, height) / 220))
  const pad = 4 * scale
  const bandFor = (lines: number) => 2 * pad + 13 * scale + (lines - 1) * LINE_UNITS * scale
  let maxLines = 0
  while (maxLines < CAPTION_LINES && bandFor(maxLines + 1) <= height * CAPTION_SHARE) maxLines++
  const margin = Math.max(4, width * 0.03)
  const lines = maxLines > 0 ? wrapCaption(text, (width - 2 * margin) / scale, maxLines) : []
  return { lines, scale, height: lines.length > 0 ? bandFor(lines.length) : 0 }
}

function captionSvg(layout: CaptionLayout, width: number, height: number): string {
  if (layout.lines.length === 0) return ''
  const { scale } = layout
  const top = height - layout.height
  const lines = layout.lines.map((line, i) =>
    strokeText(line, (width - textUnits(line) * scale) / 2, top + 4 * scale + 10 * scale + i * LINE_UNITS * scale, scale),
  )
  return `<rect y="${fmt(top)}" width="${width}" height="${fmt(layout.height)}" fill="#ffffff"/><g fill="none" stroke="#1a1a1a" stroke-width="${STROKE_UNITS}" stroke-linecap="round" stroke-linejoin="round">${lines.join('')}</g>`
}

/** The SVG and where its subjects are: the same input gives the same SVG, byte for byte. */
export function drawLocalImage(input: LocalInput): { svg: string; placed: Placed[]; caption: CaptionLayout } {
  const { width, height } = input
  const caption = captionLayout(input.prompt, width, height)
  const scene = drawScene(readPrompt(input.prompt, input.negativePrompt), width, height - caption.height, input.seed)
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${scene.svg}${captionSvg(caption, width, height)}</svg>`
  return { svg, placed: scene.placed, caption }
}

export async function renderLocalImage(input: LocalInput): Promise<Buffer> {
  const sharp = await loadSharp()
  return sharp(Buffer.from(drawLocalImage(input).svg))
    .png()
    .toBuffer()
}
