// Delivers one encrypted message to one push subscription (RFC 8030 with VAPID, RFC 8292, and
// aes128gcm, RFC 8291) through web-push, and classifies the push service's answer: 404/410 mean
// the subscription is gone for good; 429, 5xx and network errors are retried with capped
// exponential backoff that honours Retry-After; anything else is a permanent failure.
import type { Agent } from 'node:https'
import type { VapidKeys } from './vapid.js'

export type Urgency = 'very-low' | 'low' | 'normal' | 'high'
export type PushTarget = { id: string; endpoint: string; p256dh: string; auth: string }
type DeliveryStatus = 'sent' | 'gone' | 'failed'
export type Delivery = {
  subscriptionId: string
  status: DeliveryStatus
  /** The push service's last HTTP status, null when no answer came (network error). */
  statusCode: number | null
  attempts: number
  error?: string
}

/**
 * aes128gcm adds a 86-byte header (salt, record size, key id = the 65-byte server key), one
 * padding delimiter and a 16-byte tag; push services accept at most 4096 bytes of body
 * (RFC 8030 §7.2), so 3993 bytes of plaintext is the most that fits.
 */
const MAX_PUSH_BODY = 4096
const AES128GCM_OVERHEAD = 86 + 1 + 16
export const MAX_PUSH_PLAINTEXT = MAX_PUSH_BODY - AES128GCM_OVERHEAD

export type PushSenderOptions = {
  vapid: VapidKeys
  /** An https.Agent, e.g. one that trusts an extra CA (PUSH_CA_FILE). */
  agent?: Agent
  maxAttempts: number
  /** The longest single wait between attempts; a longer Retry-After ends the retries. */
  maxRetryWaitMs: number
  timeoutMs: number
  sleep?: (ms: number) => Promise<void>
}

type PushError = {
  statusCode?: number
  headers?: Record<string, string | string[] | undefined>
  body?: string
  message?: string
  code?: string
}

/** Seconds or an HTTP date (RFC 9110 §10.2.3), as milliseconds from now; undefined when absent or unreadable. */
function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value
  if (!v) return undefined
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

const retryable = (status: number | null) => status === null || status === 429 || status >= 500

export function createPushSender(o: PushSenderOptions) {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))

  async function deliver(target: PushTarget, payload: Buffer, opts: { ttl: number; urgency: Urgency; topic?: string }): Promise<Delivery> {
    let attempts = 0
    for (;;) {
      attempts += 1
      let statusCode: number | null
      let error: string | undefined
      let wait: number | undefined
      try {
        const webpush = (await import('web-push')).default
        const res = await webpush.sendNotification(
          { endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } },
          payload,
          {
            vapidDetails: o.vapid,
            TTL: opts.ttl,
            urgency: opts.urgency,
            topic: opts.topic,
            agent: o.agent,
            timeout: o.timeoutMs,
            contentEncoding: 'aes128gcm',
          },
        )
        return { subscriptionId: target.id, status: 'sent', statusCode: res.statusCode, attempts }
      } catch (err) {
        const e = err as PushError
        statusCode = typeof e.statusCode === 'number' ? e.statusCode : null
        error = statusCode === null ? (e.code ?? e.message ?? 'network error') : (e.body || e.message || `HTTP ${statusCode}`).slice(0, 200)
        wait = statusCode === null ? undefined : retryAfterMs(e.headers?.['retry-after'])
      }
      if (statusCode === 404 || statusCode === 410) return { subscriptionId: target.id, status: 'gone', statusCode, attempts }
      if (!retryable(statusCode) || attempts >= o.maxAttempts)
        return { subscriptionId: target.id, status: 'failed', statusCode, attempts, error }
      if (wait !== undefined && wait > o.maxRetryWaitMs) {
        return {
          subscriptionId: target.id,
          status: 'failed',
          statusCode,
          attempts,
          error: `push service asked to retry after ${Math.ceil(wait / 1000)} s`,
        }
      }
      // Full jitter on the exponential part, so many senders do not retry in step.
      const backoff = Math.min(o.maxRetryWaitMs, 250 * 2 ** (attempts - 1) * (0.5 + Math.random() / 2))
      await sleep(wait ?? backoff)
    }
  }

  return { deliver }
}

export type PushSender = ReturnType<typeof createPushSender>
