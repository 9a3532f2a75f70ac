// The Chromium renderer, for templates that need CSS Takumi does not draw (grid, pseudo-elements,
// floats, …): the HTML the render worker produced (Liquid runs there, bounded as for Takumi) is
// laid out by the system's Chromium, driven by playwright-core, and screenshot at the frame's size.
//
// One browser, started at the first render and shared; each render gets a context and page of its
// own (its cookies, storage and popups end with it), opened ahead of it and closed after it. A page
// reaches nothing: every request it makes is aborted except our fonts, served from memory under a
// name that resolves nowhere; a Content-Security-Policy refuses connections, frames and workers
// before they become requests; WebRTC is removed before the template's scripts run; and what still
// opens a connection meets a proxy where nothing listens. A template that spins or never finishes
// loading is cut off at the render's time bound; a browser that does not let go of it then is
// ended and started again at the next render.
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import type { RenderFailure } from './render-job.js'

type ChromiumResult = { ok: true; png: Buffer } | ({ ok: false } & RenderFailure)

export type ChromiumRenderer = {
  /** Whether the configured executable exists on this server. */
  available(): boolean
  readonly path: string
  render(input: { html: string; css?: string; width: number; height: number }): Promise<ChromiumResult>
  readonly running: number
  readonly waiting: number
  close(): Promise<void>
}

/**
 * Without the networking ones Chromium calls home for updates and components; the page's own
 * fetches are stopped by the routes below, not by these.
 */
export const CHROMIUM_BASE_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-dev-shm-usage',
]

const FLAGS = [
  ...CHROMIUM_BASE_FLAGS,
  '--disable-extensions',
  '--disable-sync',
  '--mute-audio',
  // Non-proxied UDP off: no STUN or TURN packets to an address a template names, should a page ever keep RTCPeerConnection.
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  // A navigation (a link, a refresh, window.open) opens a connection to its host before the route
  // aborts its request: a template could probe which internal ports are open. Every connection goes
  // to a proxy on a port nothing listens on instead, loopback included (<-loopback>).
  '--proxy-server=http://127.0.0.1:1',
  '--proxy-bypass-list=<-loopback>',
]

/** Our fonts' origin: `.invalid` resolves nowhere, so nothing but our route can answer it. */
const FONT_ORIGIN = 'https://screen-fonts.invalid'

const require = createRequire(import.meta.url)

/** Inter as fontsource declares it (every subset with its unicode-range), pointed at our origin. */
function fontFaces(): { css: string; files: Map<string, Buffer> } {
  const files = new Map<string, Buffer>()
  const dir = dirname(require.resolve('@fontsource/inter/400.css'))
  const css = [400, 700]
    .map((w) => readFileSync(join(dir, `${w}.css`), 'utf8'))
    .join('\n')
    .replace(/src:\s*url\(\.\/files\/([^)]+\.woff2)\)[^;]*;/g, (_m, file: string) => {
      files.set(`/${file}`, readFileSync(join(dir, 'files', file)))
      return `src: url(${FONT_ORIGIN}/${file}) format('woff2');`
    })
    // No swap: the screenshot waits for the fonts (document.fonts.ready) instead of drawing a fallback first.
    .replace(/font-display:\s*swap;/g, 'font-display: block;')
  return { css, files }
}

const CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline' data:",
  'img-src data:',
  `font-src data: ${FONT_ORIGIN}`,
  "script-src 'unsafe-inline'",
].join('; ')

/** What runs before the template's scripts: ways to the network that neither routes nor CSP cover. */
const LOCKDOWN = `for (const k of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel']) { try { delete window[k] } catch {} }`

function documentFor(html: string, css: string | undefined, width: number, height: number, fonts: string): string {
  // The same page the Takumi path draws: white, black text in Inter at 16 px, exactly the frame's size.
  const base = `html,body{margin:0;padding:0}body{width:${width}px;height:${height}px;overflow:hidden;background:#fff;color:#000;font-family:Inter,'DejaVu Sans',sans-serif;font-size:16px}`
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${CSP}"><style>${fonts}\n${base}</style>${css ? `<style>${css.replace(/<\/style/gi, '<\\/style')}</style>` : ''}</head><body>${html}</body></html>`
}

/** Renders waiting beyond this are refused (SCREEN_BUSY), as the Takumi pool does. */
const MAX_WAITING = 2000

const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? ''

export function createChromiumRenderer(opts: { path: string; pages: number; timeoutMs: number; memoryMb: number }): ChromiumRenderer {
  let browser: Promise<Browser> | undefined
  let fonts: ReturnType<typeof fontFaces> | undefined
  let running = 0
  const queue: Array<() => void> = []
  let closed = false
  /** The browser launched and not yet ended, for close() and restart(). */
  let current: Browser | undefined

  function launch(): Promise<Browser> {
    browser ??= (async () => {
      const { chromium } = await import('playwright-core')
      const b = await chromium.launch({
        executablePath: opts.path,
        // The renderer's JavaScript heap bounded as a render worker's is.
        args: [...FLAGS, `--js-flags=--max-old-space-size=${opts.memoryMb}`],
        timeout: 30_000,
      })
      // The app closed while the browser was starting: it must not outlive the app.
      if (closed) {
        await b.close().catch(() => {})
        throw new Error('the service is shutting down')
      }
      b.on('disconnected', () => {
        if (browser && current === b) browser = undefined
      })
      current = b
      return b
    })()
    // A launch that failed is tried again at the next render, not remembered.
    browser.catch(() => {
      browser = undefined
    })
    return browser
  }

  /** Ends the browser (all its pages): for a page it would not close within its bound. */
  async function restart(b: Browser) {
    if (browser && current === b) browser = undefined
    current = undefined
    await Promise.race([b.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000).unref())])
  }

  async function slot(): Promise<boolean> {
    if (running < opts.pages) {
      running++
      return true
    }
    if (queue.length >= MAX_WAITING) return false
    await new Promise<void>((resolve) => queue.push(resolve))
    // The slot was handed over by release(): running already counts it.
    return true
  }
  function release() {
    const next = queue.shift()
    if (next) next()
    else running--
  }

  async function openContext(b: Browser, width: number, height: number): Promise<BrowserContext> {
    // Each render's own context: its popups, storage and cookies end with it.
    fonts ??= fontFaces()
    const faces = fonts
    const context = await b.newContext({ viewport: { width, height }, deviceScaleFactor: 1, serviceWorkers: 'block' })
    // Every request of every page in the context (navigations, subresources, popups, workers): ours or aborted.
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url())
      const font = url.origin === FONT_ORIGIN ? faces.files.get(url.pathname) : undefined
      if (font) return route.fulfill({ status: 200, contentType: 'font/woff2', body: font })
      return route.abort('blockedbyclient')
    })
    await context.routeWebSocket(/.*/, (ws) => ws.close({ code: 1008, reason: 'no network from a screen' }))
    await context.addInitScript(LOCKDOWN)
    return context
  }

  type Fresh = { browser: Browser; context: BrowserContext; page: Page }
  /**
   * A context with its page opened ahead: a new page starts a renderer process, most of a
   * render's time (about 150 ms of 300 here), so the next render's is started while this one draws.
   */
  let spare: Promise<Fresh> | undefined

  async function openFresh(b: Browser): Promise<Fresh> {
    const context = await openContext(b, 1, 1)
    try {
      return { browser: b, context, page: await context.newPage() }
    } catch (err) {
      await context.close().catch(() => {})
      throw err
    }
  }

  /** A fresh context and page for a render (the spare, when it is this browser's), and the next spare started. */
  async function take(b: Browser): Promise<Fresh> {
    // Taken before any await: two renders never get the same spare.
    const pending = spare
    spare = undefined
    if (!closed) {
      const next = openFresh(b)
      spare = next
      next.catch(() => {
        if (spare === next) spare = undefined
      })
    }
    const ready = await pending?.catch(() => undefined)
    if (ready && ready.browser === b && !ready.page.isClosed()) return ready
    if (ready) void ready.context.close().catch(() => {})
    return openFresh(b)
  }

  async function draw(page: Page, input: { html: string; css?: string; width: number; height: number }) {
    await page.setViewportSize({ width: input.width, height: input.height })
    await page.setContent(documentFor(input.html, input.css, input.width, input.height, fonts!.css), {
      waitUntil: 'load',
      timeout: opts.timeoutMs,
    })
    return page.screenshot({
      type: 'png',
      clip: { x: 0, y: 0, width: input.width, height: input.height },
      animations: 'disabled',
      caret: 'hide',
      timeout: opts.timeoutMs,
    })
  }

  /**
   * Closes a render's context; one whose page will not go (closing a context ends its renderer
   * process, which a spinning script does not prevent, but a browser in trouble might) takes the
   * browser with it, and the next render starts a fresh one.
   */
  async function dispose(b: Browser, context: BrowserContext) {
    const closedInTime = await Promise.race([
      context.close().then(
        () => true,
        () => false,
      ),
      new Promise<false>((r) => setTimeout(() => r(false), 3000).unref()),
    ])
    if (!closedInTime) await restart(b)
  }

  const timeout = (): RenderFailure => ({
    code: 'SCREEN_RENDER_TIMEOUT',
    message: `the render took longer than ${opts.timeoutMs} ms in Chromium and was stopped`,
  })

  return {
    path: opts.path,
    available: () => existsSync(opts.path),
    get running() {
      return running
    },
    get waiting() {
      return queue.length
    },
    async render(input) {
      if (closed) return { ok: false, code: 'SCREEN_BUSY', message: 'the service is shutting down' }
      if (!(await slot())) return { ok: false, code: 'SCREEN_BUSY', message: 'too many screens are waiting to render' }
      try {
        if (closed) return { ok: false, code: 'SCREEN_BUSY', message: 'the service is shutting down' }
        let b: Browser
        let fresh: Fresh
        try {
          b = await launch()
          fresh = await take(b)
        } catch (err) {
          return { ok: false, code: 'SCREEN_RENDER_FAILED', message: `Chromium did not start: ${firstLine(err)}` }
        }
        let timer: NodeJS.Timeout | undefined
        const overran = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), opts.timeoutMs)
        })
        const drawing = draw(fresh.page, input)
        // The loser of the race settles later (a timeout's draw fails when its context closes): not an unhandled rejection.
        drawing.catch(() => {})
        try {
          const out = await Promise.race([drawing, overran])
          if (out === 'timeout') return { ok: false, ...timeout() }
          return { ok: true, png: out }
        } catch (err) {
          const message = firstLine(err)
          if (/Timeout \d+ms exceeded/.test(message)) return { ok: false, ...timeout() }
          return { ok: false, code: 'SCREEN_RENDER_FAILED', message: `Chromium could not draw the page: ${message}` }
        } finally {
          clearTimeout(timer)
          await dispose(b, fresh.context)
        }
      } finally {
        release()
      }
    },
    async close() {
      closed = true
      for (const next of queue.splice(0)) next()
      // A browser still starting closes itself when it sees `closed` (launch): waited for, so none outlives the app.
      await browser?.catch(() => undefined)
      const b = current
      browser = undefined
      current = undefined
      // The spare's context goes with its browser.
      spare = undefined
      if (b) await Promise.race([b.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000).unref())])
    },
  }
}
