// The only module that reads or writes TRMNL devices' rows; and what their polls read of the
// device, its commands and its image.
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { device, deviceCommand, deviceInit } from '../devices/tables.js'
import { imageVariant } from '../images/tables.js'
import { trmnlDevice } from './tables.js'

export type TrmnlRow = typeof trmnlDevice.$inferSelect

export async function insertTrmnlDevice(db: Executor, row: typeof trmnlDevice.$inferInsert): Promise<TrmnlRow> {
  const [stored] = await db.insert(trmnlDevice).values(row).returning()
  return stored as TrmnlRow
}

export async function findByApiKeyHash(db: Executor, hash: string): Promise<TrmnlRow | undefined> {
  const [row] = await db.select().from(trmnlDevice).where(eq(trmnlDevice.apiKeyHash, hash)).limit(1)
  return row
}

export async function findByDeviceId(db: Executor, deviceId: string): Promise<TrmnlRow | undefined> {
  const [row] = await db.select().from(trmnlDevice).where(eq(trmnlDevice.deviceId, deviceId)).limit(1)
  return row
}

/** What a poll changes: when, the device's own report, and what it was answered. */
export async function recordPoll(db: Executor, deviceId: string, poll: Partial<Omit<TrmnlRow, 'deviceId' | 'mac' | 'apiKeyHash'>>) {
  await db.update(trmnlDevice).set(poll).where(eq(trmnlDevice.deviceId, deviceId))
}

/** The oldest command still waiting for the device. */
export async function nextCommand(db: Executor, deviceId: string) {
  const [row] = await db
    .select()
    .from(deviceCommand)
    .where(and(eq(deviceCommand.deviceId, deviceId), eq(deviceCommand.status, 'sent')))
    .orderBy(asc(deviceCommand.createdAt))
    .limit(1)
  return row
}

export async function findVariant(db: Executor, imageId: string, format: string) {
  const [row] = await db
    .select()
    .from(imageVariant)
    .where(and(eq(imageVariant.imageId, imageId), eq(imageVariant.format, format)))
    .limit(1)
  return row
}

/** The variants of `format` among these images (those without one are left out). */
export async function findVariantsOf(db: Executor, imageIds: string[], format: string) {
  if (!imageIds.length) return []
  return db
    .select({ imageId: imageVariant.imageId, sha256: imageVariant.sha256, width: imageVariant.width, height: imageVariant.height })
    .from(imageVariant)
    .where(and(inArray(imageVariant.imageId, imageIds), eq(imageVariant.format, format)))
}

/**
 * Polling devices still online but overdue by more than `marginSeconds` past the poll they were
 * asked for, with when they were last seen (presence marks them offline unless a poll came since).
 */
export async function overdueDevices(db: Executor, now: Date, marginSeconds: number) {
  const due = sql`${trmnlDevice.nextPollAt} + make_interval(secs => ${marginSeconds}) < ${now.toISOString()}::timestamptz`
  return db
    .select({
      id: device.id,
      name: device.name,
      userId: device.userId,
      organizationId: device.organizationId,
      lastSeenAt: device.lastSeenAt,
    })
    .from(device)
    .innerJoin(trmnlDevice, eq(trmnlDevice.deviceId, device.id))
    .where(and(eq(device.isActive, true), due))
}

/** Earlier paired devices with this MAC that belong to `userId`, newest first. */
export async function earlierDevicesOf(db: Executor, mac: string, exceptId: string, userId: string) {
  return db
    .select({ row: trmnlDevice, deviceId: device.id })
    .from(trmnlDevice)
    .innerJoin(device, eq(device.id, trmnlDevice.deviceId))
    .where(and(eq(trmnlDevice.mac, mac), sql`${trmnlDevice.deviceId} <> ${exceptId}`, eq(device.userId, userId)))
    .orderBy(sql`${trmnlDevice.createdAt} desc`)
    .limit(1)
}

/**
 * The new pairing's token and code move to the earlier device's row and the new pairing's row
 * goes; undefined when either is gone (a concurrent poll did it, or the earlier device was deleted).
 */
export async function moveCredentials(db: Executor, from: TrmnlRow, toDeviceId: string): Promise<TrmnlRow | undefined> {
  const [gone] = await db.delete(trmnlDevice).where(eq(trmnlDevice.deviceId, from.deviceId)).returning({ id: trmnlDevice.deviceId })
  if (!gone) return undefined
  const [row] = await db
    .update(trmnlDevice)
    .set({
      apiKeyHash: from.apiKeyHash,
      friendlyId: from.friendlyId,
      model: from.model,
      firmware: from.firmware,
      // A reset frame makes a new device key: the new pairing's binding (or none yet) is the one that counts.
      publicKey: from.publicKey,
      lastSignedAt: from.lastSignedAt,
      shownImageId: null,
      lastFilename: null,
    })
    .where(eq(trmnlDevice.deviceId, toDeviceId))
    .returning()
  return row
}

/**
 * A pending pairing stays open while its device keeps polling (an expired one reopens): letting
 * it expire would make the firmware wipe its Wi-Fi settings. False when it cannot reopen (its
 * code went to another pending pairing meanwhile).
 */
export async function keepPairingOpen(db: Executor, deviceId: string, until: Date): Promise<boolean> {
  try {
    const rows = await db
      .update(deviceInit)
      .set({ status: 'pending', expiresAt: until })
      .where(and(eq(deviceInit.id, deviceId), sql`${deviceInit.status} in ('pending', 'expired')`))
      .returning({ id: deviceInit.id })
    return rows.length > 0
  } catch {
    return false
  }
}

/**
 * Pairings nobody claimed (expired or denied before `before`) whose token no frame ever used: a
 * setup the frame never followed with a poll (the firmware polls right after its setup), so no
 * frame holds it. A token a frame polled with stays however long the frame is away: no answer
 * makes the firmware call /api/setup again without forgetting its Wi-Fi (docs/trmnl.md), so a
 * forgotten one would strand it. A deleted device's row stays too, so its next poll is still told
 * to reset.
 */
export async function pruneAbandoned(db: Executor, before: Date): Promise<number> {
  const rows = await db
    .delete(trmnlDevice)
    .where(
      and(
        sql`not exists (select 1 from ${device} d where d.id = ${trmnlDevice.deviceId})`,
        sql`${trmnlDevice.lastPolledAt} is null`,
        sql`exists (select 1 from ${deviceInit} i where i.id = ${trmnlDevice.deviceId} and i.status in ('expired', 'denied') and i.expires_at < ${before.toISOString()}::timestamptz)`,
      ),
    )
    .returning({ deviceId: trmnlDevice.deviceId })
  return rows.length
}

/**
 * Accepts a signed request: binds the key when the device has none yet, and moves the newest
 * accepted timestamp on. Undefined when the device holds another key, or the timestamp is not
 * newer than one already accepted (a replay), decided in one statement so concurrent requests
 * cannot both pass.
 */
export async function acceptSignature(db: Executor, deviceId: string, publicKey: string, at: number) {
  const [row] = await db
    .update(trmnlDevice)
    .set({ publicKey: sql`coalesce(${trmnlDevice.publicKey}, ${publicKey})`, lastSignedAt: at })
    .where(
      and(
        eq(trmnlDevice.deviceId, deviceId),
        sql`(${trmnlDevice.publicKey} is null or ${trmnlDevice.publicKey} = ${publicKey})`,
        sql`(${trmnlDevice.lastSignedAt} is null or ${trmnlDevice.lastSignedAt} < ${at})`,
      ),
    )
    .returning({ deviceId: trmnlDevice.deviceId })
  return row
}
