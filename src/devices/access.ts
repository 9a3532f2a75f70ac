// Who may see or change a device: its owner, and members of its organization (owners and
// admins manage, members read). Better Auth stores several roles as "admin,member".
import type { Executor } from '../db/client.js'
import { appError } from '../errors.js'
import { matchesHash } from './codes.js'
import { findDevice, findMemberRole, type DeviceRow } from './repository.js'

export type DeviceAccess = 'manage' | 'read'

const managerRoles = new Set(['owner', 'admin'])

export const rolesOf = (role: string | null) =>
  (role ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean)
export const canManageWithRole = (role: string | null) => rolesOf(role).some((r) => managerRoles.has(r))

async function accessTo(db: Executor, dev: DeviceRow, userId: string): Promise<DeviceAccess | null> {
  if (dev.userId === userId) return 'manage'
  if (!dev.organizationId) return null
  const role = await findMemberRole(db, dev.organizationId, userId)
  if (role === null) return null
  return canManageWithRole(role) ? 'manage' : 'read'
}

/** Whether the caller has `need` on an already loaded device (a question, not a refusal). */
export async function mayAccess(db: Executor, dev: DeviceRow, userId: string, need: DeviceAccess): Promise<boolean> {
  const access = await accessTo(db, dev, userId)
  return access === 'manage' || (access === 'read' && need === 'read')
}

/**
 * The one check of a caller against a device, for routes (deviceAccess in route-access.ts) and
 * for services handed a deviceId in a body alike: the device, or 404 when the caller may not see
 * it (its existence is not revealed), 403 when they may only read it.
 */
export async function accessibleDevice(db: Executor, deviceId: string, userId: string, need: DeviceAccess): Promise<DeviceRow> {
  const dev = await findDevice(db, deviceId)
  const access = dev ? await accessTo(db, dev, userId) : null
  if (!dev || !access) throw appError('DEVICE_NOT_FOUND')
  if (need === 'manage' && access !== 'manage')
    throw appError('FORBIDDEN', 'Only the owner or an organization admin may change this device')
  return dev
}

/**
 * The device itself, over HTTP: `Authorization: Bearer <its secret>` (the MQTT password), for
 * devices that talk to the service without MQTT. Throws 401 for anything else.
 */
export async function requireDeviceSecret(db: Executor, deviceId: string, authorization: string | undefined): Promise<DeviceRow> {
  const secret = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1]
  const dev = secret ? await findDevice(db, deviceId) : undefined
  if (!dev || !secret || !matchesHash(secret, dev.secretHash)) throw appError('UNAUTHORIZED', "The device's id and secret do not match")
  return dev
}
