// Serves the console (web/dist): hashed assets cached for a year, index.html never cached and with
// a Content-Security-Policy that allows only this service's origin, and index.html for the
// console's deep links (/devices/:id, …) through the not-found handler, so a path the API or the
// account routes own is never answered with the page.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { appError } from '../errors.js'
import { tableC } from '../auth/mount.js'

/** Paths the console never answers, whatever the method: the API, docs, files, device and invitation pages, MQTT. */
const reservedPrefixes = ['/api', '/docs', '/files', '/device', '/accept-invitation', '/mqtt', '/.well-known']
/** The account operations at the root (Table C) and everything under them. */
const accountPaths = [...new Set(tableC.map(([, path]) => path.split('/:')[0]!))]

const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`)

/** Whether GET `path` may be answered with the console's page. */
function isConsolePath(path: string): boolean {
  if (!path.startsWith('/') || path.includes('..')) return false
  if (reservedPrefixes.some((p) => under(path, p))) return false
  if (accountPaths.some((p) => under(path, p))) return false
  // A missing asset is a 404, not the page (a stale tab asking for an old bundle must see the error).
  return !/\.[a-z0-9]+$/i.test(path)
}

const YEAR = 31_536_000

export type ConsoleOptions = { distDir: string; baseUrl: string; extraImageOrigins?: string[] }

function contentSecurityPolicy(baseUrl: string, extraImageOrigins: string[]): string {
  const ws = baseUrl.replace(/^http/, 'ws')
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    ['img-src', "'self'", 'data:', 'blob:', ...extraImageOrigins].join(' '),
    // 'self' covers same-origin WebSockets in current browsers; the explicit ws origin is for older ones.
    `connect-src 'self' ${ws}`,
    "worker-src 'self'",
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/**
 * Registers the console's routes and returns the not-found fallback that answers its deep links
 * (installErrorHandling calls it before answering 404).
 */
export async function consoleRoutes(app: FastifyInstance, opts: ConsoleOptions) {
  const indexPath = join(opts.distDir, 'index.html')
  const csp = contentSecurityPolicy(opts.baseUrl, opts.extraImageOrigins ?? [])
  // Read per request while it may still be built or rebuilt (npm run dev:web, tests); small and cached by the OS.
  const readIndex = () => readFile(indexPath).catch(() => undefined)

  // preCompressed: the build wrote .br and .gz beside each asset (src/web/build.ts).
  await app.register(fastifyStatic, { root: opts.distDir, serve: false, preCompressed: true })

  async function sendIndex(_req: FastifyRequest, reply: FastifyReply) {
    const html = await readIndex()
    if (!html) throw appError('CONSOLE_NOT_BUILT')
    return reply
      .header('cache-control', 'no-cache')
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .type('text/html; charset=utf-8')
      .send(html)
  }

  app.get('/', { config: { auth: 'none' }, schema: { hide: true } }, sendIndex)
  app.get('/assets/*', { config: { auth: 'none' }, schema: { hide: true } }, (req, reply) => {
    const file = (req.params as { '*': string })['*']
    return reply.sendFile(`assets/${file}`, { maxAge: YEAR * 1000, immutable: true })
  })
  // Files Vite copies from web/public keep their names: revalidated, never immutable.
  for (const name of ['favicon.svg', 'sw.js', 'manifest.webmanifest']) {
    app.get(`/${name}`, { config: { auth: 'none' }, schema: { hide: true } }, (_req, reply) =>
      reply.header('cache-control', 'no-cache').sendFile(name, { cacheControl: false }),
    )
  }

  return async function consoleFallback(req: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false
    const path = req.url.split('?')[0]!
    if (!isConsolePath(path)) return false
    // Clients of the API asking for JSON keep getting the JSON 404.
    if (!(req.headers.accept ?? '').includes('text/html')) return false
    await sendIndex(req, reply)
    return true
  }
}
