// The HTTP layer every remote provider shares: a timeout on every call, one mapping from HTTP
// and network failures to ProviderError, and a guard that keeps the key on the provider's host.
import { isIP } from 'node:net'
import { ProviderError, retryAfterMs } from '../provider.js'

export const DEFAULT_TIMEOUT_MS = 30_000

export type HttpOptions = {
  /** Provider name, used in error messages. */
  provider: string
  /** The key or token; scrubbed from every message we build, in case a provider echoes it. */
  secret: string
  timeoutMs: number
}

export type RequestSpec = {
  method?: 'GET' | 'POST' | 'PUT'
  url: string | URL
  headers?: Record<string, string>
  body?: unknown
  signal?: AbortSignal
}

export type JsonResponse = { status: number; headers: Headers; body: unknown }

const MAX_MESSAGE = 500

/** Keeps a provider's text safe to store and show: no key, bounded length. */
export function scrub(text: string, secret: string): string {
  let out = secret ? text.split(secret).join('[redacted]') : text
  if (out.length > MAX_MESSAGE) out = `${out.slice(0, MAX_MESSAGE)}…`
  return out
}

/** The human message out of the error bodies the providers send (FastAPI, problem+json, OpenAI). */
export function errorText(body: unknown): string | undefined {
  if (typeof body === 'string') return body.trim() || undefined
  if (!body || typeof body !== 'object') return undefined
  const b = body as Record<string, unknown>
  if (typeof b.detail === 'string') return b.detail
  if (Array.isArray(b.detail)) {
    const parts = b.detail.map((d) => {
      if (d && typeof d === 'object') {
        const o = d as Record<string, unknown>
        const loc = Array.isArray(o.loc) ? o.loc.join('.') : undefined
        return [loc, typeof o.msg === 'string' ? o.msg : undefined].filter(Boolean).join(': ')
      }
      return String(d)
    })
    const joined = parts.filter(Boolean).join('; ')
    if (joined) return joined
  }
  if (typeof b.error === 'string') return b.error
  if (b.error && typeof b.error === 'object') {
    const m = (b.error as Record<string, unknown>).message
    if (typeof m === 'string') return m
  }
  if (typeof b.message === 'string') return b.message
  if (typeof b.title === 'string') return b.title
  return undefined
}

/** Maps a non-2xx answer to a ProviderError: 429/5xx/408 retry, auth and rejections do not. */
export function httpError(opts: HttpOptions, res: JsonResponse): ProviderError {
  const detail = errorText(res.body)
  const message = scrub(`${opts.provider}: HTTP ${res.status}${detail ? `: ${detail}` : ''}`, opts.secret)
  const s = res.status
  if (s === 429) return new ProviderError(message, 'PROVIDER_RATE_LIMITED', true, retryAfterMs(res.headers.get('retry-after')), s)
  if (s >= 500 || s === 408)
    return new ProviderError(message, 'PROVIDER_UNAVAILABLE', true, retryAfterMs(res.headers.get('retry-after')), s)
  if (s === 401 || s === 403) return new ProviderError(message, 'PROVIDER_AUTH', false, undefined, s)
  if (s === 402) return new ProviderError(message, 'PROVIDER_BILLING', false, undefined, s)
  if (s === 404) return new ProviderError(message, 'PROVIDER_NOT_FOUND', false, undefined, s)
  return new ProviderError(message, 'PROVIDER_REJECTED', false, undefined, s)
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text()
  if (!text) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * One JSON request with a timeout. Resolves with any HTTP status (callers decide what a 4xx
 * means for them); rejects only with ProviderError: a timeout or network failure is retryable,
 * and so is an abort by the caller (shutdown), so the job is picked up again later.
 */
export async function send(opts: HttpOptions, spec: RequestSpec): Promise<JsonResponse> {
  const timeout = AbortSignal.timeout(opts.timeoutMs)
  const signal = spec.signal ? AbortSignal.any([timeout, spec.signal]) : timeout
  const headers: Record<string, string> = { accept: 'application/json', ...spec.headers }
  if (spec.body !== undefined) headers['content-type'] = 'application/json'
  try {
    const res = await fetch(spec.url, {
      method: spec.method ?? 'GET',
      headers,
      body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
      signal,
      redirect: 'error',
    })
    return { status: res.status, headers: res.headers, body: await readBody(res) }
  } catch (err) {
    if (spec.signal?.aborted) throw new ProviderError(`${opts.provider}: request aborted`, 'PROVIDER_ABORTED', true)
    if (timeout.aborted) throw new ProviderError(`${opts.provider}: no answer within ${opts.timeoutMs} ms`, 'PROVIDER_TIMEOUT', true)
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    const why = cause?.code ?? cause?.message ?? (err as Error).message
    throw new ProviderError(scrub(`${opts.provider}: network error: ${why}`, opts.secret), 'PROVIDER_UNAVAILABLE', true)
  }
}

/** send(), and any non-2xx becomes the mapped ProviderError. */
export async function sendOk(opts: HttpOptions, spec: RequestSpec): Promise<JsonResponse> {
  const res = await send(opts, spec)
  if (res.status < 200 || res.status > 299) throw httpError(opts, res)
  return res
}

/** A 2xx whose body is not what the provider documents: retried, since proxies answer like this. */
export function badResponse(opts: HttpOptions, what: string): ProviderError {
  return new ProviderError(`${opts.provider}: unexpected response: ${what}`, 'PROVIDER_BAD_RESPONSE', true)
}

export function asObject(body: unknown): Record<string, unknown> | undefined {
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined
}

/** The base URL without a trailing slash, so `${base}/v1/...` joins cleanly. */
export function trimBase(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '')
}

/**
 * Whether a URL handed to us by the provider may receive our key: the base URL's origin, or
 * (with `siblings`, for providers that answer from regional hosts such as api.us1.bfl.ai) an
 * https host under the base host's parent domain. Anything else would leak the key (SSRF).
 */
export function isTrustedUrl(raw: unknown, baseUrl: string, siblings = false): raw is string {
  if (typeof raw !== 'string') return false
  let url: URL
  let base: URL
  try {
    url = new URL(raw)
    base = new URL(baseUrl)
  } catch {
    return false
  }
  if (url.username || url.password) return false
  if (url.origin === base.origin) return true
  if (!siblings || url.protocol !== 'https:' || base.protocol !== 'https:' || isIP(base.hostname)) return false
  const labels = base.hostname.split('.')
  if (labels.length < 3) return false
  const parent = labels.slice(1).join('.')
  return url.hostname.endsWith(`.${parent}`) && (url.port === '' || url.port === '443')
}
