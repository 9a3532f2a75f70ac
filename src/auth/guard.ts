// Resolves the caller of our own routes from a Better Auth session (cookie or
// `Authorization: Bearer <session token>`) through auth.api, not the HTTP handler.
import type { FastifyRequest } from 'fastify'
import { appError } from '../errors.js'
import type { Database } from '../db/client.js'
import { API_KEY_HEADER, type Auth } from './auth.js'
import { findUserById, type UserRow } from './users-repository.js'
import { credentialOf, type CachedSession, type SessionCache } from './session-cache.js'

export type Caller = CachedSession

export function toHeaders(req: FastifyRequest): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else headers.set(name, value)
  }
  return headers
}

/** The app's session cache and database, registered once per Auth instance by buildApp. */
const registry = new WeakMap<Auth, { cache: SessionCache; db: Database }>()

export function attachSessionCache(auth: Auth, cache: SessionCache, db: Database): void {
  registry.set(auth, { cache, db })
}

/**
 * The caller's session and fresh user row, from the session cache or Better Auth's getSession
 * (through auth.api, not the HTTP handler). A malformed token is the same as no token.
 */
export async function findCaller(auth: Auth, req: FastifyRequest): Promise<Caller | null> {
  const credential = credentialOf(req.headers as { authorization?: string; cookie?: string })
  if (!credential) return null
  const reg = registry.get(auth)
  const hit = await reg?.cache.get(credential)
  if (hit) return hit
  // Read before the lookup: a revocation that lands while it runs keeps its result out of the cache.
  const generation = (await reg?.cache.generation().catch(() => -1)) ?? -1
  const found = await auth.api.getSession({ headers: toHeaders(req), query: { disableRefresh: true } }).catch(() => null)
  if (!found) return null
  const user = reg ? await findUserById(reg.db, found.user.id) : (found.user as unknown as UserRow)
  if (!user) return null
  const value: Caller = { session: found.session as Caller['session'], user }
  reg?.cache.set(credential, value, generation)
  return value
}

export async function requireCaller(auth: Auth, req: FastifyRequest): Promise<Caller> {
  const caller = await findCaller(auth, req)
  if (!caller) throw appError('UNAUTHORIZED')
  return caller
}

export type Principal = { userId: string; activeOrganizationId: string | null; via: 'session' | 'jwt' | 'api-key' }

const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)

/** A banned (until later) or missing account acts for nobody. */
async function activeUser(db: Database, userId: string | undefined): Promise<UserRow | undefined> {
  const user = userId ? await findUserById(db, userId) : undefined
  const banned = user?.banned && (!user.banExpires || user.banExpires.getTime() > Date.now())
  return user && !banned ? user : undefined
}

/**
 * The caller of a route that also takes a Better Auth JWT (`/api/auth/token`, verified against
 * the JWKS) or an API key (`x-api-key`, verified and counted by the api-key plugin). Neither
 * carries a session, so the user is re-read: a banned or deleted account is refused at once.
 */
export async function requirePrincipal(auth: Auth, db: Database, req: FastifyRequest): Promise<Principal> {
  const apiKey = req.headers[API_KEY_HEADER]
  if (typeof apiKey === 'string' && apiKey) {
    const result = await auth.api.verifyApiKey({ body: { key: apiKey } }).catch(() => null)
    const user = result?.valid ? await activeUser(db, result.key?.referenceId) : undefined
    if (!user) {
      const limited = result?.error?.code === 'RATE_LIMITED'
      if (limited) throw appError('RATE_LIMITED')
      throw appError('UNAUTHORIZED', 'Invalid, disabled or expired API key')
    }
    return { userId: user.id, activeOrganizationId: null, via: 'api-key' }
  }
  const header = req.headers.authorization ?? ''
  const bearer = header.startsWith('Bearer ') ? header.slice(7).trim() : ''
  if (bearer && looksLikeJwt(bearer)) {
    const { payload } = await auth.api.verifyJWT({ body: { token: bearer } }).catch(() => ({ payload: null }))
    const user = await activeUser(db, payload?.sub)
    if (!user) throw appError('UNAUTHORIZED', 'Invalid or expired token')
    return { userId: user.id, activeOrganizationId: null, via: 'jwt' }
  }
  const caller = await requireCaller(auth, req)
  return { userId: caller.user.id, activeOrganizationId: caller.session.activeOrganizationId ?? null, via: 'session' }
}
