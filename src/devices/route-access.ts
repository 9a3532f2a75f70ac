// A route's device, declared once with the route: `preHandler: deviceAccess(db, 'manage')` loads
// the device its path names and checks the caller before the handler runs, which reads it with
// deviceOf(req). The check itself is accessibleDevice's, the same one services use for ids in a body.
import type { FastifyRequest } from 'fastify'
import type { Executor } from '../db/client.js'
import { principalOf } from '../auth/route-auth.js'
import { accessibleDevice, type DeviceAccess } from './access.js'
import type { DeviceRow } from './repository.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by deviceAccess: the device the path names, which the caller may access as declared. */
    device?: DeviceRow
  }
}

/**
 * A preHandler (after authentication and schema validation): 404 when the caller may not see the
 * device named by the path parameter `param`, 403 when they need 'manage' and may only read it.
 */
export function deviceAccess(db: Executor, need: DeviceAccess, param = 'id') {
  return async function loadDevice(req: FastifyRequest): Promise<void> {
    const id = (req.params as Record<string, string | undefined>)[param]
    if (id === undefined) throw new Error(`${req.method} ${req.routeOptions.url} has no path parameter "${param}"`)
    req.device = await accessibleDevice(db, id, principalOf(req).userId, need)
  }
}

/** The device deviceAccess loaded for this request. */
export function deviceOf(req: FastifyRequest): DeviceRow {
  // A route that reads its device without declaring deviceAccess is a bug, not a client's error.
  if (!req.device) throw new Error(`${req.method} ${req.routeOptions.url} reads its device without declaring deviceAccess`)
  return req.device
}
