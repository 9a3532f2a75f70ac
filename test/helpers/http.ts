// A JSON call to the service as a client makes it: optional bearer token, JSON body, and the
// answer's status, parsed body (or its text when it is not JSON) and headers. By inject when
// `base` is an app of this process.
import { appFetch } from './app-fetch.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any
export type Res = { status: number; body: Json; headers: Headers }
export type CallOptions = {
  method?: string
  token?: string
  body?: unknown
  /** Over a real socket even when `base` is an app of this process (test/helpers/app-fetch.ts). */
  socket?: boolean
}

export async function jsonCall(base: string, path: string, opts: CallOptions = {}): Promise<Res> {
  const headers: Record<string, string> = {}
  if (opts.token) headers.authorization = `Bearer ${opts.token}`
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  const res = await (opts.socket ? fetch : appFetch)(`${base}${path}`, {
    method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  })
  const text = await res.text()
  let body: Json = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body, headers: res.headers }
}
