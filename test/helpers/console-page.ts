// The console's own data layer (web/src/queries) run in Node against the real app, the way a page
// of the service runs it: same origin, the page's cookies with every request. Its modules read the
// page's origin once, at import (window.location.origin), so they are given a fixed one; this
// file's fetch sends what goes there to the app under test with the signed-in browser's cookies and
// Origin, and everything else through untouched. Loaded by path (not a static import): the console
// is type-checked with its own settings (web/tsconfig.json: DOM, bundler resolution), not this project's.
import { CookieJar } from './client.js'
import type { TestApp } from './app.js'

type Tap = { teardown(fn: () => unknown): void }

const PAGE = 'http://console.test'

/** The browser whose requests the console's modules make now: which app, with which cookies. */
export type ConsolePage = { svc: TestApp; jar: CookieJar }

let current: ConsolePage | undefined
let realFetch: typeof fetch | undefined

async function pageFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const original = realFetch ?? fetch
  const url = new URL(input instanceof Request ? input.url : String(input), PAGE)
  if (url.origin !== PAGE) return original(input, init)
  if (!current) throw new Error(`console request to ${url.pathname} with no page open (openPage first)`)
  const { svc, jar } = current
  const target = new URL(url.pathname + url.search, svc.url)
  const req = input instanceof Request ? new Request(target, input) : new Request(target, init)
  const headers = new Headers(req.headers)
  if (jar.size) headers.set('cookie', jar.header())
  // What a browser sends from a page of the service; Better Auth checks it on cookie-authenticated writes.
  headers.set('origin', svc.url)
  const res = await original(new Request(req, { headers, redirect: 'manual' }))
  jar.store(res)
  return res
}

const modules = ['devices', 'playlists', 'credits', 'generation', 'notifications', 'account', 'admin', 'organizations', 'screens'] as const
type Modules = Record<(typeof modules)[number], any> & { api: any }

let loaded: Promise<Modules> | undefined

/**
 * The console's modules, loaded once a process: `window` exists only while they are imported, and
 * the page's fetch is global while the file runs (Better Auth's client looks it up at each request).
 */
export function consoleModules(t: Tap): Promise<Modules> {
  if (!realFetch) {
    realFetch = globalThis.fetch
    globalThis.fetch = pageFetch as typeof fetch
    t.teardown(() => {
      globalThis.fetch = realFetch!
      realFetch = undefined
      current = undefined
    })
  }
  loaded ??= (async () => {
    const g = globalThis as { window?: unknown }
    g.window = { location: { origin: PAGE, protocol: 'http:', host: 'console.test' } }
    try {
      const root = new URL('../../web/src/', import.meta.url)
      const out: Record<string, unknown> = { api: await import(new URL('api.ts', root).href) }
      for (const m of modules) out[m] = await import(new URL(`queries/${m}.ts`, root).href)
      return out as Modules
    } finally {
      delete g.window
    }
  })()
  return loaded
}

/** From now on the console's requests go to `svc` with this browser's cookies (a fresh jar unless given). */
export function openPage(svc: TestApp, jar = new CookieJar()): ConsolePage {
  current = { svc, jar }
  return current
}
