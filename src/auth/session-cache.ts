// An in-process cache of resolved sessions (credential → session and user), so our routes and
// GET /get-session do not run Better Auth's session lookup on every request.
//
// Revocation must win over speed: any account-changing request through the auth mount (sign-out,
// revoke, ban, password change, role change, e-mail verification, …) clears the whole cache
// before its response is sent. Those requests are rare next to session reads, so clearing
// everything is cheap and leaves no per-path bookkeeping to get wrong.
//
// A clear moves the cache to a new generation. A lookup notes the generation before it reads the
// database and may store its result only if no clear happened meanwhile: a lookup that began
// before a sign-out and finished after it would otherwise put the revoked session back for the
// whole TTL. With Redis the generation is a shared counter, incremented before the response; a
// cache hit on any instance checks it (one GET), so a request that starts after a revocation's
// response never sees a session cached before it, whatever the pub/sub latency. The pub/sub
// message only frees memory early and tells listeners (the MQTT broker closes revoked apps).
// A clear on this instance waits for its listeners' work: the broker has closed the apps of a
// removed member before remove-member answers, so no publish after the answer reaches them.
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

type Entry = { value: CachedSession; until: number; generation: number }

export type SessionCache = {
  /** The generation a lookup starts in: pass it to `set`. */
  generation(): Promise<number>
  get(credential: string): Promise<CachedSession | undefined>
  /** Stores a lookup's result, unless the cache was cleared since `generation` was read. */
  set(credential: string, value: CachedSession, generation: number): void
  /**
   * Clears this instance and, with Redis, every other instance; resolves once no instance can hit
   * an older entry and this instance's listeners have finished (other instances' run on their own).
   */
  clearAll(): Promise<void>
  /** Called after every clear on this instance, whichever instance caused it; a clear made here awaits what it returns. */
  onClear(listener: () => unknown): void
  readonly size: number
  close(): Promise<void>
}

const MAX_ENTRIES = 50_000

export async function createSessionCache(opts: {
  ttlMs: number
  redis?: RedisHandle
  onError?: (err: unknown) => void
}): Promise<SessionCache> {
  const entries = new Map<string, Entry>()
  const listeners: Array<() => unknown> = []
  const redis = opts.redis
  const channel = redis ? `${redis.prefix}session-cache:clear` : ''
  const counter = redis ? `${redis.prefix}session-cache:generation` : ''
  // In-process: the local counter is the generation. With Redis: the last shared value seen here.
  let generation = 0

  /** Empties this instance; resolves once its listeners have finished (never rejects). */
  const dropAll = (next: number): Promise<void> => {
    generation = next
    entries.clear()
    const running: Array<Promise<unknown>> = []
    for (const l of listeners) {
      try {
        running.push(Promise.resolve(l()).catch((err) => opts.onError?.(err)))
      } catch (err) {
        opts.onError?.(err)
      }
    }
    return Promise.all(running).then(() => {})
  }

  /** The shared generation; a newer one than this instance knew empties it first. */
  async function current(): Promise<number> {
    if (!redis) return generation
    const shared = Number((await redis.client.get(counter)) ?? 0)
    if (shared !== generation) void dropAll(shared)
    return shared
  }

  const subscriber = redis ? redis.client.duplicate() : undefined
  if (subscriber) {
    subscriber.on('error', (err) => opts.onError?.(err))
    subscriber.on('message', (from: string, message: string) => {
      if (from !== channel) return
      const next = Number(message)
      if (Number.isFinite(next) && next > generation) void dropAll(next)
    })
    await subscriber.connect()
    await subscriber.subscribe(channel)
    generation = Number((await redis!.client.get(counter)) ?? 0)
  }

  return {
    generation: current,
    async get(credential) {
      const e = entries.get(credential)
      if (!e) return undefined
      if (e.until <= Date.now()) {
        entries.delete(credential)
        return undefined
      }
      // With Redis an error reading the generation is a miss: the database decides.
      const gen = await current().catch(() => -1)
      if (gen !== e.generation) {
        entries.delete(credential)
        return undefined
      }
      return e.value
    },
    set(credential, value, gen) {
      if (opts.ttlMs <= 0 || gen !== generation) return
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string)
      // Never longer than the session itself lives.
      const until = Math.min(Date.now() + opts.ttlMs, new Date(value.session.expiresAt).getTime())
      entries.set(credential, { value, until, generation: gen })
    },
    async clearAll() {
      if (!redis) return dropAll(generation + 1)
      let dropped: Promise<void> = Promise.resolve()
      try {
        const next = await redis.client.incr(counter)
        dropped = dropAll(next)
        await redis.client.publish(channel, String(next))
      } catch (err) {
        // Without the shared counter other instances cannot be told: empty this one at least, and
        // refuse what lookups in flight bring back until the counter is readable again.
        generation = -2
        entries.clear()
        opts.onError?.(err)
      }
      await dropped
    },
    onClear(listener) {
      listeners.push(listener)
    },
    get size() {
      return entries.size
    },
    async close() {
      if (subscriber && subscriber.status !== 'end') await subscriber.quit().catch(() => subscriber.disconnect())
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
