// A screen from template to PNG: Liquid (liquidjs, with its parse, render-time and memory limits)
// to HTML, then HTML and class-based CSS to an image by Takumi (chosen over satori + resvg by
// measurement, docs/decisions.md). Runs inside the render worker (render-worker.ts), never on the
// service's event loop.
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Renderer } from '@takumi-rs/core'
import { fromHtml } from '@takumi-rs/helpers/html'
import { Liquid } from 'liquidjs'
import type { RenderFailure, RenderJob } from './render-job.js'

/** Liquid's own budgets: a template that parses or renders longer, or builds more, stops with an error. */
const PARSE_LIMIT = 200_000
const RENDER_LIMIT_MS = 2_000
const MEMORY_LIMIT = 20_000_000
const MAX_HTML = 2_000_000

const liquid = new Liquid({
  parseLimit: PARSE_LIMIT,
  renderLimit: RENDER_LIMIT_MS,
  memoryLimit: MEMORY_LIMIT,
  // Templates read their data, never the prototype chain of it.
  ownPropertyOnly: true,
  // No {% include %} or {% render %} of files: a template is one string.
  fs: {
    exists: async () => false,
    existsSync: () => false,
    readFile: async () => '',
    readFileSync: () => '',
    resolve: (_root: string, file: string) => file,
  },
  relativeReference: false,
})

const require = createRequire(import.meta.url)
/** Inter's subsets (fontsource splits it by script): German, Polish, Greek, Cyrillic, Vietnamese text all draw. */
const INTER_SUBSETS = ['latin', 'latin-ext', 'greek', 'greek-ext', 'cyrillic', 'cyrillic-ext', 'vietnamese']
const fontFile = (subset: string, weight: number) => require.resolve(`@fontsource/inter/files/inter-${subset}-${weight}-normal.woff`)
/**
 * Glyphs Inter lacks (arrows, most symbols) come from the system's DejaVu Sans where it is
 * installed (Debian's fonts-dejavu-core, which the TRMNL screens' SVG rendering also uses).
 */
const FALLBACK_FONTS = ['/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf']

let renderer: Promise<Renderer> | undefined
function takumi(): Promise<Renderer> {
  renderer ??= (async () => {
    const r = new Renderer()
    for (const subset of INTER_SUBSETS)
      for (const weight of [400, 700])
        await r.registerFont({ name: 'Inter', data: readFileSync(fontFile(subset, weight)), weight } as never)
    for (const [i, file] of FALLBACK_FONTS.entries())
      if (existsSync(file)) await r.registerFont({ name: 'DejaVu Sans', data: readFileSync(file), weight: i ? 700 : 400 } as never)
    return r
  })()
  return renderer
}

/** Loads the fonts before the first job, so a job's time bound does not pay for the worker's start. */
export async function warmRenderer(): Promise<void> {
  await takumi()
}

export class RenderError extends Error {
  constructor(
    readonly code: RenderFailure['code'],
    message: string,
  ) {
    super(message)
  }
}

/** The names a template reads: the data's own fields at the top (as TRMNL's merge variables), and each part by name. */
export function templateScope(
  job: Pick<RenderJob, 'variables' | 'data' | 'now' | 'timeZone' | 'device'>,
  prepared?: Record<string, unknown>,
) {
  const data = prepared ?? job.data
  const spread = data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {}
  return {
    ...job.variables,
    ...spread,
    data,
    variables: job.variables,
    device: job.device ?? null,
    now: job.now,
    time_zone: job.timeZone,
  }
}

export async function renderHtml(template: string, scope: Record<string, unknown>): Promise<string> {
  let parsed: ReturnType<Liquid['parse']>
  try {
    parsed = liquid.parse(template)
  } catch (err) {
    // Parse and tokenization errors, and the parse length limit: the template itself is wrong.
    throw new RenderError('SCREEN_TEMPLATE_INVALID', err instanceof Error ? err.message : String(err))
  }
  let html: string
  try {
    html = await liquid.render(parsed, scope)
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    // liquidjs's Limiter says "memory alloc limit exceeded" or "template render limit exceeded".
    if (/memory alloc limit exceeded/.test(message)) throw new RenderError('SCREEN_RENDER_MEMORY', message)
    if (/template render limit exceeded/.test(message)) throw new RenderError('SCREEN_RENDER_TIMEOUT', message)
    throw new RenderError('SCREEN_RENDER_FAILED', message)
  }
  if (html.length > MAX_HTML) throw new RenderError('SCREEN_RENDER_MEMORY', `the template produced ${html.length} characters of HTML`)
  return html
}

/** HTML to a PNG of exactly width × height, on white, in Inter unless the CSS says otherwise. */
export async function htmlToPng(html: string, css: string | undefined, width: number, height: number): Promise<Buffer> {
  const root = `<div style="display:flex;flex-direction:column;width:${width}px;height:${height}px;background-color:#fff;color:#000;font-family:Inter;font-size:16px;overflow:hidden">${html}</div>`
  try {
    const node = fromHtml(root)
    return await (await takumi()).render(node.node as never, { width, height, format: 'png', css: css ? [css] : [] })
  } catch (err) {
    throw new RenderError('SCREEN_RENDER_FAILED', `the HTML could not be drawn: ${err instanceof Error ? err.message : String(err)}`)
  }
}
