// The screen's renderer of choice behind one render(): Takumi in the worker pool, or Chromium for
// templates that need full CSS. Either way Liquid runs in the pool (its parse, time and memory
// bounds, off the event loop); for Chromium the worker stops at the HTML and the browser draws it,
// bounded in time and pages by chromium.ts. Both answer a PNG at the frame's size, which then goes
// through the same display pipeline.
import type { ChromiumRenderer } from './chromium.js'
import type { RenderJob, Renderer } from './render-job.js'
import type { RenderPool } from './render-pool.js'

export type ScreenRenderer = {
  render(job: RenderJob & { renderer?: Renderer }): ReturnType<RenderPool['render']>
  /** Whether a screen may choose Chromium on this server (its executable exists). */
  chromiumAvailable(): boolean
  readonly chromiumPath: string
  close(): Promise<void>
}

export function createScreenRenderer(pool: RenderPool, chromium: ChromiumRenderer): ScreenRenderer {
  return {
    chromiumPath: chromium.path,
    chromiumAvailable: () => chromium.available(),
    async render({ renderer, ...job }) {
      if (renderer !== 'chromium') return pool.render(job)
      // Told before the template is rendered: the answer is the same whatever the template.
      if (!chromium.available())
        return {
          ok: false,
          code: 'SCREEN_RENDERER_UNAVAILABLE',
          message: `the screen asks for Chromium, which is not installed on this server (no ${chromium.path}; CHROMIUM_PATH)`,
        }
      const page = await pool.render({ ...job, htmlOnly: true })
      if (!page.ok) return page
      const drawn = await chromium.render({ html: page.html, width: job.width, height: job.height, ...(page.css ? { css: page.css } : {}) })
      return drawn.ok ? { ok: true, png: drawn.png, html: page.html } : drawn
    },
    async close() {
      await Promise.all([pool.close(), chromium.close()])
    },
  }
}
