// The HTTP side of a device: pairing calls and image downloads against the service, with the
// errors a device must tell apart (server unreachable, refused, slowed down).
import type { DisplayProfile } from './profiles.js'
import type { paths } from '../clients/api-types.js'

/** The service could not be reached at all (connection refused, DNS, timeout). */
export class UnreachableError extends Error {
  override name = 'UnreachableError'
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`cannot reach ${new URL(url).origin} (${describeCause(cause)})`)
  }
}

/** The service answered with an error body {message, code}. */
export class ApiError extends Error {
  override name = 'ApiError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds from Retry-After, when the answer had one. */
    readonly retryAfter?: number,
  ) {
    super(`${status} ${code}: ${message}`)
  }
}

function describeCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause
  return cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err)
}

// The service's request and response shapes come from its OpenAPI document (clients/api-types.ts,
// `npm run openapi:types`), so a change there breaks the simulator's build rather than a device.
type Post<P extends keyof paths> = paths[P] extends { post: infer O } ? O : never
type JsonBody<P extends keyof paths> = Post<P> extends { requestBody: { content: { 'application/json': infer B } } } ? B : never
type JsonOk<P extends keyof paths> = Post<P> extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never

export type InitResponse = JsonOk<'/api/device/init'>
export type InitRecord = JsonOk<'/api/device/get-init-device'>
export type DeviceInfo = Omit<JsonBody<'/api/device/init'>, 'display'>
export type ClaimResponse = JsonOk<'/api/device/validate'>
type JsonGet<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { 'application/json': infer R } } } } }
  ? R
  : never

const REQUEST_TIMEOUT_MS = 30_000

export class ServiceApi {
  readonly server: string

  constructor(server: string) {
    this.server = server.replace(/\/+$/, '')
  }

  private async request<T>(method: string, path: string, body?: unknown, token?: string): Promise<T> {
    const url = `${this.server}${path}`
    let res: Response
    try {
      res = await fetch(url, {
        method,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      })
    } catch (err) {
      throw new UnreachableError(url, err)
    }
    const text = await res.text()
    let json: Record<string, unknown> = {}
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {}
    } catch {
      // Not our service (a proxy's HTML error page, another program on the port).
      if (!res.ok) throw new ApiError(res.status, 'NOT_JSON', `${method} ${path} answered ${res.status} without a JSON body`)
      throw new ApiError(
        res.status,
        'NOT_JSON',
        `${method} ${path} answered a body that is not JSON; is ${this.server} the display service?`,
      )
    }
    if (!res.ok) {
      const retry = Number(res.headers.get('retry-after'))
      throw new ApiError(
        res.status,
        String(json.code ?? 'HTTP_ERROR'),
        String(json.message ?? res.statusText),
        Number.isFinite(retry) && retry >= 0 ? retry : undefined,
      )
    }
    return json as T
  }

  init(display: DisplayProfile, info: DeviceInfo): Promise<InitResponse> {
    return this.request('POST', '/api/device/init', { display, ...info })
  }

  poll(deviceId: string, deviceCode: string): Promise<InitRecord> {
    return this.request('POST', '/api/device/get-init-device', { deviceId, deviceCode })
  }

  /** Claims the device showing `pinCode` for the account behind `token` (what the user's app does). */
  claim(token: string, pinCode: string, name: string): Promise<ClaimResponse> {
    return this.request('POST', '/api/device/validate', { pinCode, name }, token)
  }

  /** The device's firmware offer with a fresh download link (its own secret), for when the one it has expired. */
  firmwareOffer(deviceId: string, secret: string): Promise<JsonGet<'/api/device/{id}/firmware/offer'>> {
    return this.request('GET', `/api/device/${encodeURIComponent(deviceId)}/firmware/offer`, undefined, secret)
  }

  /** Downloads an image the service announced; the URL is the service's own. */
  async download(url: string, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
    let res: Response
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    } catch (err) {
      throw new UnreachableError(url, err)
    }
    if (!res.ok) throw new ApiError(res.status, 'DOWNLOAD_FAILED', `GET ${url} answered ${res.status}`)
    if (!res.body || maxBytes === Number.POSITIVE_INFINITY) return Buffer.from(await res.arrayBuffer())
    // Read up to maxBytes and stop: a device has only so much room.
    const chunks: Buffer[] = []
    let total = 0
    for await (const chunk of res.body) {
      chunks.push(Buffer.from(chunk))
      total += chunk.length
      if (total >= maxBytes) break
    }
    return Buffer.concat(chunks).subarray(0, maxBytes)
  }
}
