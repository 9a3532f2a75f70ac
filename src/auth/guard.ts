// Resolves the caller of our own routes from a Better Auth session (cookie or
// `Authorization: Bearer <session token>`) through auth.api, not the HTTP handler.
import type { FastifyRequest } from 'fastify'
import { AppError } from '../errors.js'
import type { Database } from '../db/client.js'
import type { Auth } from './auth.js'
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
  const hit = reg?.cache.get(credential)
  if (hit) return hit
  const found = await auth.api.getSession({ headers: toHeaders(req), query: { disableRefresh: true } }).catch(() => null)
  if (!found) return null
  const user = reg ? await findUserById(reg.db, found.user.id) : (found.user as unknown as UserRow)
  if (!user) return null
  const value: Caller = { session: found.session as Caller['session'], user }
  reg?.cache.set(credential, value)
  return value
}

export async function requireCaller(auth: Auth, req: FastifyRequest): Promise<Caller> {
  const caller = await findCaller(auth, req)
  if (!caller) throw new AppError(401, 'UNAUTHORIZED', 'A valid session is required')
  return caller
}

export type Principal = { userId: string; activeOrganizationId: string | null; via: 'session' | 'jwt' }

const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)

/**
 * The caller of a route that also takes a Better Auth JWT (`/api/auth/token`, verified against
 * the JWKS). A JWT cannot be revoked before it expires, so the user is re-read: a banned or
 * deleted account is refused at once.
 */
export async function requirePrincipal(auth: Auth, db: Database, req: FastifyRequest): Promise<Principal> {
  const header = req.headers.authorization ?? ''
  const bearer = header.startsWith('Bearer ') ? header.slice(7).trim() : ''
  if (bearer && looksLikeJwt(bearer)) {
    const { payload } = await auth.api.verifyJWT({ body: { token: bearer } }).catch(() => ({ payload: null }))
    const user = payload?.sub ? await findUserById(db, payload.sub) : undefined
    const banned = user?.banned && (!user.banExpires || user.banExpires.getTime() > Date.now())
    if (!user || banned) throw new AppError(401, 'UNAUTHORIZED', 'Invalid or expired token')
    return { userId: user.id, activeOrganizationId: null, via: 'jwt' }
  }
  const caller = await requireCaller(auth, req)
  return { userId: caller.user.id, activeOrganizationId: caller.session.activeOrganizationId ?? null, via: 'session' }
}
