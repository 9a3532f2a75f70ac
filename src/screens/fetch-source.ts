// Fetches a screen's data URL with the guards a server fetching user-given URLs needs: http(s)
// only; every address the name resolves to checked before connecting, and the connection made to
// the checked address (no second lookup a rebinding DNS could answer differently); redirects
// followed by hand, each hop checked again; bounded in time and size; JSON parsed (or an ICS
// feed's text kept). Loopback, link-local, private, unique-local and every other special range
// are refused unless the caller allows private addresses (an admin's screen that asks for it).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'

export type SourceErrorCode =
  | 'SCREEN_SOURCE_FAILED'
  | 'SCREEN_SOURCE_TIMEOUT'
  | 'SCREEN_SOURCE_TOO_LARGE'
  | 'SCREEN_SOURCE_NOT_JSON'
  | 'SCREEN_SOURCE_FORBIDDEN'

export class SourceError extends Error {
  constructor(
    readonly code: SourceErrorCode,
    message: string,
  ) {
    super(message)
  }
}

type FetchOptions = {
  timeoutMs: number
  maxBytes: number
  maxRedirects?: number
  headers?: Record<string, string>
  /** 'json' parses the answer; 'text' keeps it (an ICS feed). */
  as: 'json' | 'text'
  /** Whether an address may be connected to: by default only public unicast ones. */
  allowAddress?: (address: string) => boolean
}

/** Public unicast only: ipaddr.js names loopback, private, linkLocal, uniqueLocal, carrierGradeNat and the rest otherwise. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  return ipaddr.process(address).range() === 'unicast'
}

const allowAll = () => true
export const addressPolicy = (allowPrivate: boolean) => (allowPrivate ? allowAll : isPublicAddress)

/** A lookup that answers only addresses the policy allows, refusing the host when any of them is not. */
function guardedLookup(allowAddress: (a: string) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0)
      const list = addresses as LookupAddress[]
      const refused = list.find((a) => !allowAddress(a.address))
      if (refused || !list.length)
        return callback(
          Object.assign(new Error(`${hostname} resolves to ${refused?.address ?? 'nothing'}, which is not a public address`), {
            code: 'SCREEN_SOURCE_FORBIDDEN',
          }),
          '',
          0,
        )
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list)
      callback(null, list[0]!.address, list[0]!.family)
    })
  }
}

type Answer = { status: number; location?: string; contentType: string; body: Buffer }

function requestOnce(url: URL, opts: FetchOptions, signal: AbortSignal): Promise<Answer> {
  const allow = opts.allowAddress ?? isPublicAddress
  const host = url.hostname.replace(/^\[|\]$/g, '')
  // A literal address is never looked up: it is checked here.
  if (isIP(host) && !allow(host)) throw new SourceError('SCREEN_SOURCE_FORBIDDEN', `${host} is not a public address`)
  const client = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: 'GET',
        headers: { accept: opts.as === 'json' ? 'application/json' : 'text/calendar, text/plain, */*', ...opts.headers },
        lookup: guardedLookup(allow),
        signal,
        // A fresh connection per fetch: a pooled one could have been made to another answer of the name.
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0
        if (status >= 300 && status < 400) {
          res.resume()
          return resolve({ status, location: res.headers.location, contentType: '', body: Buffer.alloc(0) })
        }
        const declared = Number(res.headers['content-length'])
        if (Number.isFinite(declared) && declared > opts.maxBytes) {
          res.destroy()
          return reject(new SourceError('SCREEN_SOURCE_TOO_LARGE', `the answer is ${declared} bytes, more than ${opts.maxBytes}`))
        }
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > opts.maxBytes) {
            res.destroy()
            reject(new SourceError('SCREEN_SOURCE_TOO_LARGE', `the answer is more than ${opts.maxBytes} bytes`))
            return
          }
          chunks.push(chunk)
        })
        res.on('end', () => resolve({ status, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks) }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** The URL's answer, parsed; a SourceError saying what was wrong otherwise. */
export async function fetchSource(rawUrl: string, opts: FetchOptions): Promise<unknown> {
  const signal = AbortSignal.timeout(opts.timeoutMs)
  let url: URL
  try {
    url = new URL(rawUrl)
  } catch {
    throw new SourceError('SCREEN_SOURCE_FAILED', 'the data URL is not a URL')
  }
  const hops = opts.maxRedirects ?? 5
  for (let hop = 0; ; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new SourceError('SCREEN_SOURCE_FORBIDDEN', `${url.protocol} URLs are not fetched`)
    let answer: Answer
    try {
      answer = await requestOnce(url, opts, signal)
    } catch (err) {
      if (err instanceof SourceError) throw err
      const e = err as Error & { code?: string }
      if (e.code === 'SCREEN_SOURCE_FORBIDDEN') throw new SourceError('SCREEN_SOURCE_FORBIDDEN', e.message)
      if (signal.aborted || e.name === 'AbortError' || e.name === 'TimeoutError')
        throw new SourceError('SCREEN_SOURCE_TIMEOUT', `no complete answer within ${opts.timeoutMs} ms`)
      throw new SourceError('SCREEN_SOURCE_FAILED', `the data URL could not be fetched: ${e.code ?? e.message}`)
    }
    if (answer.location !== undefined) {
      if (hop >= hops) throw new SourceError('SCREEN_SOURCE_FAILED', `more than ${hops} redirects`)
      try {
        url = new URL(answer.location, url)
      } catch {
        throw new SourceError('SCREEN_SOURCE_FAILED', 'a redirect named no valid URL')
      }
      continue
    }
    if (answer.status < 200 || answer.status >= 300) throw new SourceError('SCREEN_SOURCE_FAILED', `the data URL answered ${answer.status}`)
    const text = answer.body.toString('utf8')
    if (opts.as === 'text') return text
    try {
      return JSON.parse(text) as unknown
    } catch {
      throw new SourceError('SCREEN_SOURCE_NOT_JSON', `the answer is not JSON (${answer.contentType || 'no content type'})`)
    }
  }
}
