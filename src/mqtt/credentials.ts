// Checks an MQTT client's credentials and topic access; shared by the embedded broker's hooks
// and the HTTP auth hook an external broker calls.
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { matchesHash } from '../devices/codes.js'
import type { DeviceOwner } from '../devices/presence-store.js'
import { findDeviceCredentials, visiblePairs, type DeviceCredentialRow } from '../devices/repository.js'
import { batched } from '../../broker/batching.js'
import { appSubscriptionTarget, deviceMayPublish, deviceMaySubscribe } from './topic-rules.js'

export type Identity = { kind: 'device'; deviceId: string } | { kind: 'app'; userId: string }
export type CredentialCheck =
  | { ok: true; identity: Identity; device?: DeviceOwner; session?: { id: string; expiresAt: Date } }
  | { ok: false; returnCode: 2 | 4 | 5; reason: string }

export type DeviceLookup = (id: string) => Promise<DeviceCredentialRow | undefined>

/** One query per lookup: for the HTTP auth hook an external broker calls. */
export const directLookup =
  (db: Database): DeviceLookup =>
  async (id) =>
    (await findDeviceCredentials(db, [id]))[0]

/**
 * Lookups made while an earlier one is in flight share one query (see batching.ts). One query at a
 * time: an idle broker still asks at once, and under a connect storm the CONNECTs that arrive
 * during a query go out together in the next (with two in flight, batches held a few devices and
 * each CONNECT paid most of a statement).
 */
export function batchedLookup(db: Database): DeviceLookup {
  const loader = batched<string, DeviceCredentialRow | undefined>(
    async (ids) => {
      const byId = new Map((await findDeviceCredentials(db, ids)).map((r) => [r.id, r]))
      return ids.map((id) => byId.get(id))
    },
    { concurrency: 1, maxBatchSize: 500 },
  )
  return (id) => loader.load(id)
}

export const APP_USERNAME = 'user'

/** What a WebSocket upgrade carried: its cookie and Origin header, and the origins whose pages may use the cookie. */
export type BrowserCredential = { cookie?: string; origin?: string; allowedOrigins: readonly string[] }
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export async function checkCredentials(
  db: Database,
  auth: Auth,
  clientId: string,
  username: string | undefined,
  password: string,
  lookup: DeviceLookup = directLookup(db),
  browser?: BrowserCredential,
): Promise<CredentialCheck> {
  // A browser on MQTT over WebSocket: no password, its session cookie on the upgrade request.
  const byCookie = username === APP_USERNAME && !password && browser?.cookie !== undefined
  if (!username || (!password && !byCookie)) return { ok: false, returnCode: 4, reason: 'username and password are required' }
  if (username === APP_USERNAME) {
    // Companion apps: the password is a Better Auth session token. Their client ids must not
    // collide with device ids, or connecting would take over a device's session.
    if (UUID.test(clientId)) return { ok: false, returnCode: 2, reason: 'app client ids must not look like device ids' }
    // A cookie goes with any request to this host, including a WebSocket another site opens:
    // only pages of this service (or a trusted origin) may use it (cross-site WebSocket hijacking).
    if (byCookie && !browser.allowedOrigins.includes(browser.origin ?? '')) {
      return { ok: false, returnCode: 5, reason: 'a session cookie is accepted only from pages of this service' }
    }
    const headers = byCookie ? new Headers({ cookie: browser.cookie! }) : new Headers({ authorization: `Bearer ${password}` })
    const session = await auth.api.getSession({ headers }).catch(() => null)
    return session
      ? {
          ok: true,
          identity: { kind: 'app', userId: session.user.id },
          session: { id: session.session.id, expiresAt: new Date(session.session.expiresAt) },
        }
      : { ok: false, returnCode: 4, reason: 'invalid session token' }
  }
  if (clientId !== username) return { ok: false, returnCode: 2, reason: 'the client id must be the device id' }
  // Device ids are UUIDs: anything else is unknown without asking the database.
  const dev = UUID.test(username) ? await lookup(username) : undefined
  if (!dev) return { ok: false, returnCode: 4, reason: 'unknown device or wrong secret' }
  if (!dev.secretHash) return { ok: false, returnCode: 5, reason: 'device credentials were revoked; pair again' }
  if (!matchesHash(password, dev.secretHash)) return { ok: false, returnCode: 4, reason: 'unknown device or wrong secret' }
  return {
    ok: true,
    identity: { kind: 'device', deviceId: dev.id },
    device: { userId: dev.userId, organizationId: dev.organizationId, name: dev.name },
  }
}

export function mayPublish(identity: Identity, topic: string): boolean {
  return identity.kind === 'device' && deviceMayPublish(identity.deviceId, topic)
}

/** Decides whether an app may watch a device; concurrent checks (one SUBSCRIBE's filters, many apps) share one query. */
export type AppAccessCheck = (userId: string, deviceId: string) => Promise<boolean>

export function directAccessCheck(db: Database): AppAccessCheck {
  return async (userId, deviceId) => (await visiblePairs(db, [{ userId, deviceId }])).has(`${userId}|${deviceId}`)
}

export function batchedAccessCheck(db: Database): AppAccessCheck {
  const loader = batched<{ userId: string; deviceId: string }, boolean>(
    async (pairs) => {
      const visible = await visiblePairs(db, pairs)
      return pairs.map((p) => visible.has(`${p.userId}|${p.deviceId}`))
    },
    { concurrency: 2, maxBatchSize: 500 },
  )
  return (userId, deviceId) => loader.load({ userId, deviceId })
}

export async function maySubscribe(identity: Identity, filter: string, canSee: AppAccessCheck): Promise<boolean> {
  if (identity.kind === 'device') return deviceMaySubscribe(identity.deviceId, filter)
  const target = appSubscriptionTarget(filter)
  // Device ids are UUIDs: a filter naming anything else is refused without a query.
  if (!target || !UUID.test(target)) return false
  return canSee(identity.userId, target)
}
