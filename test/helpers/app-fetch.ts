// `fetch` for the tests' calls to an app of this process, through Fastify's inject
// (light-my-request) instead of a socket: the same routes, hooks, parsers and serializers, without
// Node's HTTP client and server, which were about 29 % of a full-app test file's CPU (issue 32).
// An app registers its URL when startApp starts it; a URL of any other server (a service in a
// child process, a stand-in provider) goes through the real `fetch`. Tests whose subject is the
// socket (streaming, body limits over the wire, draining, keep-alive, browsers, other processes)
// opt out: startApp's `sockets`, a helper's `socket` option, or plain `fetch`.
// DPS_TEST_SOCKETS=1 sends every call over sockets, to tell an inject difference from a real bug.
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'
import type { FastifyInstance } from 'fastify'

const apps = new Map<string, FastifyInstance>()

/**
 * Sends calls to `url`'s origin to `app` by inject. Call before the app is ready (it adds a hook):
 * from preClose on, calls go over the socket again, so a closing or closed app answers as a real
 * one does (503 while closing, connection refused after).
 */
export function registerApp(url: string, app: FastifyInstance): void {
  const origin = new URL(url).origin
  apps.set(origin, app)
  app.addHook('preClose', async () => {
    if (apps.get(origin) === app) apps.delete(origin)
  })
}

function targetOf(input: RequestInfo | URL): URL {
  if (input instanceof URL) return input
  return new URL(typeof input === 'string' ? input : input.url)
}

// What undici's fetch sends when the caller does not say (Better Auth records the user agent).
// Not accept-encoding: the answer would come compressed, which fetch decodes and inject does not.
const defaultHeaders = { accept: '*/*', 'accept-language': '*', 'sec-fetch-mode': 'cors', 'user-agent': 'node' }

const nullBodyStatuses = new Set([101, 103, 204, 205, 304])
const redirectStatuses = new Set([301, 302, 303, 307, 308])

/** `fetch`, by inject when the URL is an app's of this process (see registerApp). */
export async function appFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const app = process.env.DPS_TEST_SOCKETS ? undefined : apps.get(targetOf(input).origin)
  if (!app) return fetch(input, init)
  const request = new Request(input, init)
  return inject(app, request, request.body ? new Uint8Array(await request.arrayBuffer()) : undefined, 0)
}

async function inject(
  app: FastifyInstance,
  request: Request,
  body: Uint8Array<ArrayBuffer> | undefined,
  redirects: number,
): Promise<Response> {
  const url = new URL(request.url)
  const headers: Record<string, string> = { ...defaultHeaders, host: url.host }
  request.headers.forEach((value, name) => {
    headers[name] = value
  })
  request.signal.throwIfAborted()
  const res = await app.inject({
    method: request.method,
    url: url.pathname + url.search,
    headers,
    payload: body && Buffer.from(body.buffer, body.byteOffset, body.byteLength),
    signal: request.signal,
  })
  const out = new Headers()
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue
    for (const one of Array.isArray(value) ? value : [value]) out.append(name, String(one))
  }
  const location = out.get('location')
  if (redirectStatuses.has(res.statusCode) && location && request.redirect !== 'manual') {
    if (request.redirect === 'error' || redirects >= 20) throw new TypeError('fetch failed: redirect')
    return follow(request, body, new URL(location, url), res.statusCode, redirects + 1)
  }
  const empty = nullBodyStatuses.has(res.statusCode) || request.method === 'HEAD'
  const response = new Response(empty ? null : new Uint8Array(decoded(res.rawPayload, out.get('content-encoding'))), {
    status: res.statusCode,
    statusText: res.statusMessage,
    headers: out,
  })
  Object.defineProperties(response, { url: { value: url.href }, redirected: { value: redirects > 0 } })
  return response
}

/** A redirect as fetch follows it: 303 (and 301/302 after a POST) turn into a GET without a body. */
async function follow(
  request: Request,
  body: Uint8Array<ArrayBuffer> | undefined,
  next: URL,
  status: number,
  redirects: number,
): Promise<Response> {
  const toGet = status === 303 || ((status === 301 || status === 302) && request.method === 'POST')
  const headers = new Headers(request.headers)
  if (toGet) for (const name of ['content-type', 'content-length']) headers.delete(name)
  const sameOrigin = next.origin === new URL(request.url).origin
  if (!sameOrigin) for (const name of ['authorization', 'cookie']) headers.delete(name)
  const init: RequestInit = { method: toGet ? 'GET' : request.method, headers, redirect: request.redirect, signal: request.signal }
  const app = apps.get(next.origin)
  if (!app) return fetch(next, { ...init, body: toGet ? undefined : body })
  return inject(app, new Request(next, init), toGet ? undefined : body, redirects)
}

/** The body as fetch hands it to the caller: decoded when the caller asked for a compressed answer. */
function decoded(body: Buffer, encoding: string | null): Buffer {
  if (encoding === 'br') return brotliDecompressSync(body)
  if (encoding === 'gzip') return gunzipSync(body)
  if (encoding === 'deflate') return inflateSync(body)
  return body
}
