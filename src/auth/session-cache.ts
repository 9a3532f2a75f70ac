// An in-process cache of resolved sessions (credential → session and user), so our routes and
// GET /get-session do not run Better Auth's session lookup on every request.
//
// Revocation must win over speed: any account-changing request through the auth mount (sign-out,
// revoke, ban, password change, role change, e-mail verification, …) clears the whole cache on
// this instance before its response is sent, and publishes a clear on Redis so every other
// instance clears within its pub/sub latency. Those requests are rare next to session reads, so
// clearing everything is cheap and leaves no per-path bookkeeping to get wrong.
import type { RedisHandle } from '../redis/client.js'
import type { UserRow } from './users-repository.js'

export type CachedSession = {
  session: {
    id: string
    token: string
    userId: string
    expiresAt: Date
    createdAt: Date
    updatedAt: Date
    ipAddress?: string | null
    userAgent?: string | null
    impersonatedBy?: string | null
    activeOrganizationId?: string | null
  }
  user: UserRow
}

type Entry = { value: CachedSession; until: number }

export type SessionCache = {
  get(credential: string): CachedSession | undefined
  set(credential: string, value: CachedSession): void
  /** Clears this instance and, with Redis, every other instance. */
  clearAll(): Promise<void>
  readonly size: number
  close(): Promise<void>
}

const MAX_ENTRIES = 50_000

export async function createSessionCache(opts: { ttlMs: number; redis?: RedisHandle; onError?: (err: unknown) => void }): Promise<SessionCache> {
  const entries = new Map<string, Entry>()
  const channel = opts.redis ? `${opts.redis.prefix}session-cache:clear` : ''
  const subscriber = opts.redis ? opts.redis.client.duplicate() : undefined
  if (subscriber) {
    subscriber.on('error', (err) => opts.onError?.(err))
    await subscriber.connect()
    await subscriber.subscribe(channel, () => entries.clear())
  }

  return {
    get(credential) {
      const e = entries.get(credential)
      if (!e) return undefined
      if (e.until <= Date.now()) {
        entries.delete(credential)
        return undefined
      }
      return e.value
    },
    set(credential, value) {
      if (opts.ttlMs <= 0) return
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string)
      // Never longer than the session itself lives.
      const until = Math.min(Date.now() + opts.ttlMs, new Date(value.session.expiresAt).getTime())
      entries.set(credential, { value, until })
    },
    async clearAll() {
      entries.clear()
      if (opts.redis) await opts.redis.client.publish(channel, 'all').catch((err) => opts.onError?.(err))
    },
    get size() {
      return entries.size
    },
    async close() {
      if (subscriber?.isOpen) await subscriber.close()
    },
  }
}

/** The credential a request presents: its bearer token, else its session cookie(s). */
export function credentialOf(headers: { authorization?: string; cookie?: string }): string | undefined {
  const auth = headers.authorization
  if (auth?.startsWith('Bearer ')) return `b:${auth.slice(7).trim()}`
  const cookie = headers.cookie
  if (!cookie) return undefined
  const parts = cookie
    .split(';')
    .map((c) => c.trim())
    .filter((c) => c.includes('session_token') || c.includes('session_data'))
    .sort()
  return parts.length ? `c:${parts.join(';')}` : undefined
}

/**
 * Auth paths that change no existing session or user: reads, and requests that only create a new
 * session or send a message. Every other successful request through the mount clears the cache.
 * Sign-ins that verify an address (magic link, e-mail code) are left out on purpose: verifying
 * can grant the admin role (ADMIN_EMAILS), which cached sessions of that user must show.
 */
const LEAVES_SESSIONS = new Set([
  '/sign-in/email',
  '/sign-in/magic-link',
  '/sign-up/email',
  '/request-password-reset',
  '/forget-password/email-otp',
  '/send-verification-email',
  '/email-otp/send-verification-otp',
  '/email-otp/check-verification-otp',
  '/passkey/verify-authentication',
  '/get-session',
  '/list-sessions',
  '/list-accounts',
  '/account-info',
  '/ok',
  '/error',
  '/jwks',
  '/token',
  '/reference',
  '/open-api/generate-schema',
  '/admin/list-users',
  '/admin/get-user',
  '/admin/list-user-sessions',
  '/admin/has-permission',
  '/organization/list',
  '/organization/get-full-organization',
  '/organization/list-members',
  '/organization/list-invitations',
  '/organization/list-user-invitations',
  '/organization/get-invitation',
  '/organization/get-active-member',
  '/organization/get-active-member-role',
  '/organization/check-slug',
  '/organization/has-permission',
  '/organization/list-teams',
  '/passkey/list-user-passkeys',
  '/passkey/generate-register-options',
  '/passkey/generate-authenticate-options',
  '/multi-session/list-device-sessions',
])

export function leavesSessionsUnchanged(path: string): boolean {
  return LEAVES_SESSIONS.has(path.split('?')[0] as string)
}
