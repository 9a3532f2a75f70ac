// The only module that reads or writes device and device_init rows. State changes are
// compare-and-set updates: the WHERE clause names the state the caller saw.
import { and, desc, eq, inArray, lte, gt, or, sql } from 'drizzle-orm'
import { rowsOf, type Executor } from '../db/client.js'
import { member } from '../db/schema.js'
import { olderThan, type Cursor } from '../db/paging.js'
import { device, deviceCommand, deviceInit, type DeviceInitStatus, type DeviceReport } from './tables.js'

export type DeviceRow = typeof device.$inferSelect
export type DeviceInitRow = typeof deviceInit.$inferSelect
export type NewDeviceInit = typeof deviceInit.$inferInsert
export type NewDevice = typeof device.$inferInsert
export type DevicePatch = Partial<Pick<DeviceRow, 'name' | 'icon' | 'color' | 'description' | 'selectedModel'>>

const isUniqueViolation = (err: unknown) => {
  const e = err as { code?: string; cause?: { code?: string } }
  return e?.code === '23505' || e?.cause?.code === '23505'
}

/** Inserts a pending record, drawing a new pin until it is unique among pending records. */
export async function insertDeviceInit(db: Executor, row: NewDeviceInit, newPin: () => string): Promise<DeviceInitRow> {
  for (let attempt = 0; ; attempt++) {
    try {
      const [created] = await db.insert(deviceInit).values(row).returning()
      return created as DeviceInitRow
    } catch (err) {
      if (!isUniqueViolation(err) || attempt >= 5) throw err
      row = { ...row, pinCode: newPin() }
    }
  }
}

export async function findDeviceInit(db: Executor, id: string): Promise<DeviceInitRow | undefined> {
  const [row] = await db.select().from(deviceInit).where(eq(deviceInit.id, id)).limit(1)
  return row
}

/**
 * The record a code names. A pin is unique only among pending records, so the pending one wins;
 * otherwise the newest record with that pin, so a pin that was just used (or expired, swept or not)
 * is answered 409/410 like a userCode, not as a wrong code.
 */
export async function findDeviceInitByCode(
  db: Executor,
  code: { pinCode?: string; userCode?: string },
): Promise<DeviceInitRow | undefined> {
  if (code.userCode) {
    const [row] = await db.select().from(deviceInit).where(eq(deviceInit.userCode, code.userCode)).limit(1)
    return row
  }
  const pin = code.pinCode ?? ''
  const [pending] = await db
    .select()
    .from(deviceInit)
    .where(and(eq(deviceInit.pinCode, pin), eq(deviceInit.status, 'pending')))
    .limit(1)
  if (pending) return pending
  const [latest] = await db.select().from(deviceInit).where(eq(deviceInit.pinCode, pin)).orderBy(desc(deviceInit.createdAt)).limit(1)
  return latest
}

export async function transitionDeviceInit(
  db: Executor,
  id: string,
  from: DeviceInitStatus[],
  to: DeviceInitStatus,
  set: Partial<NewDeviceInit> = {},
  opts: { unexpiredAt?: Date } = {},
): Promise<DeviceInitRow | undefined> {
  const [row] = await db
    .update(deviceInit)
    .set({ ...set, status: to })
    .where(
      and(
        eq(deviceInit.id, id),
        inArray(deviceInit.status, from),
        opts.unexpiredAt ? gt(deviceInit.expiresAt, opts.unexpiredAt) : undefined,
      ),
    )
    .returning()
  return row
}

/** Marks every pending record past its expiry as expired; returns how many. */
export async function expireStaleDeviceInits(db: Executor, now: Date): Promise<number> {
  const rows = await db
    .update(deviceInit)
    .set({ status: 'expired' })
    .where(and(eq(deviceInit.status, 'pending'), lte(deviceInit.expiresAt, now)))
    .returning({ id: deviceInit.id })
  return rows.length
}

export async function countFailedAttempt(db: Executor, id: string): Promise<number> {
  const [row] = await db
    .update(deviceInit)
    .set({ failedAttempts: sql`${deviceInit.failedAttempts} + 1` })
    .where(eq(deviceInit.id, id))
    .returning({ failedAttempts: deviceInit.failedAttempts })
  return row?.failedAttempts ?? 0
}

/** Records a poll unless the previous one was less than `interval` seconds ago. */
export async function recordPoll(db: Executor, id: string, now: Date, intervalSeconds: number): Promise<boolean> {
  const earliest = new Date(now.getTime() - intervalSeconds * 1000)
  const rows = await db
    .update(deviceInit)
    .set({ lastPolledAt: now })
    .where(and(eq(deviceInit.id, id), or(sql`${deviceInit.lastPolledAt} IS NULL`, lte(deviceInit.lastPolledAt, earliest))))
    .returning({ id: deviceInit.id })
  return rows.length === 1
}

export async function insertDevice(db: Executor, row: NewDevice): Promise<DeviceRow> {
  const [created] = await db.insert(device).values(row).returning()
  return created as DeviceRow
}

export async function findDevice(db: Executor, id: string): Promise<DeviceRow | undefined> {
  const [row] = await db.select().from(device).where(eq(device.id, id)).limit(1)
  return row
}

export async function findDevices(db: Executor, ids: readonly string[]): Promise<DeviceRow[]> {
  return ids.length
    ? db
        .select()
        .from(device)
        .where(inArray(device.id, [...ids]))
    : []
}

/** The user's own devices and those of `organizationId`, newest first; `cursor` is the last row of the previous page. */
export async function listDevices(
  db: Executor,
  userId: string,
  organizationId: string | null,
  limit: number,
  cursor?: Cursor,
): Promise<DeviceRow[]> {
  const whose = organizationId ? or(eq(device.userId, userId), eq(device.organizationId, organizationId)) : eq(device.userId, userId)
  const after = olderThan(device.createdAt, device.id, cursor)
  return db.select().from(device).where(and(whose, after)).orderBy(desc(device.createdAt), desc(device.id)).limit(limit)
}

export async function updateDevice(db: Executor, id: string, patch: DevicePatch): Promise<DeviceRow | undefined> {
  const [row] = await db
    .update(device)
    .set({ ...patch, updatedAt: new Date() })
    .where(eq(device.id, id))
    .returning()
  return row
}

export async function setDeviceSecret(db: Executor, id: string, secretHash: string | null): Promise<DeviceRow | undefined> {
  const [row] = await db
    .update(device)
    .set(
      secretHash
        ? { secretHash, secretIssuedAt: new Date(), updatedAt: new Date() }
        : { secretHash: null, isActive: false, updatedAt: new Date() },
    )
    .where(eq(device.id, id))
    .returning()
  return row
}

export async function deleteDeviceRows(db: Executor, id: string): Promise<DeviceRow | undefined> {
  await db.delete(deviceInit).where(eq(deviceInit.id, id))
  const [row] = await db.delete(device).where(eq(device.id, id)).returning()
  return row
}

/**
 * Which of several (user, device) pairs the user may see (owner, or any role in the device's
 * organization), in one query: an app's SUBSCRIBE may name hundreds of devices at once.
 */
export async function visiblePairs(db: Executor, pairs: ReadonlyArray<{ userId: string; deviceId: string }>): Promise<Set<string>> {
  if (!pairs.length) return new Set()
  const values = sql.join(
    pairs.map((p) => sql`(${p.userId}::text, ${p.deviceId}::text)`),
    sql`, `,
  )
  const rows = await db.execute(sql`
    select distinct v.user_id, v.device_id from (values ${values}) as v(user_id, device_id)
    join ${device} d on d.id = v.device_id
    left join ${member} m on m.organization_id = d.organization_id and m.user_id = v.user_id
    where d.user_id = v.user_id or m.id is not null`)
  return new Set(rowsOf<{ user_id: string; device_id: string }>(rows).map((r) => `${r.user_id}|${r.device_id}`))
}

export async function findMemberRole(db: Executor, organizationId: string, userId: string): Promise<string | null> {
  const [row] = await db
    .select({ role: member.role })
    .from(member)
    .where(and(eq(member.organizationId, organizationId), eq(member.userId, userId)))
    .limit(1)
  return row?.role ?? null
}

/** What the broker needs to authenticate a device and to attribute its events. */
export type DeviceCredentialRow = Pick<DeviceRow, 'id' | 'userId' | 'organizationId' | 'name' | 'secretHash'>

/** Several devices' credential rows in one query (the broker batches concurrent connects). */
export async function findDeviceCredentials(db: Executor, ids: readonly string[]): Promise<DeviceCredentialRow[]> {
  if (!ids.length) return []
  return db
    .select({
      id: device.id,
      userId: device.userId,
      organizationId: device.organizationId,
      name: device.name,
      secretHash: device.secretHash,
    })
    .from(device)
    .where(inArray(device.id, [...ids]))
}

export type PresenceUpdate = { id: string; active: boolean; at: Date; connectionId: string }
export type PresenceUpdated = Pick<DeviceRow, 'id' | 'userId' | 'organizationId' | 'name'> & {
  wasActive: boolean
  previousConnectionId?: string | null
}

/**
 * Sets isActive, last_seen_at and the live connection of several devices in one statement and
 * returns, for each device updated, whether it was active before. A connect always applies; a
 * disconnect applies only while its connection is still the device's live one, so a device that
 * already reconnected elsewhere (a takeover on another instance) is not marked offline.
 */
export async function setPresenceMany(db: Executor, updates: readonly PresenceUpdate[]): Promise<PresenceUpdated[]> {
  if (!updates.length) return []
  // Rows are locked in id order, so two instances writing overlapping batches cannot deadlock.
  const sorted = [...updates].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const values = sql.join(
    sorted.map((u) => sql`(${u.id}::text, ${u.active}::boolean, ${u.at.toISOString()}::timestamptz, ${u.connectionId}::text)`),
    sql`, `,
  )
  const rows = await db.execute(sql`
    update ${device} as d set is_active = v.active, last_seen_at = greatest(d.last_seen_at, v.at),
      connection_id = case when v.active then v.conn else null end
    from (values ${values}) as v(id, active, at, conn), ${device} as o
    where d.id = v.id and o.id = d.id and (v.active or o.connection_id is null or o.connection_id = v.conn)
    returning d.id, d.user_id, d.organization_id, d.name, o.is_active as was_active, o.connection_id as previous_connection_id`)
  return rowsOf<{
    id: string
    user_id: string
    organization_id: string | null
    name: string
    was_active: boolean
    previous_connection_id: string | null
  }>(rows).map((r) => ({
    id: r.id,
    userId: r.user_id,
    organizationId: r.organization_id,
    name: r.name,
    wasActive: Boolean(r.was_active),
    previousConnectionId: r.previous_connection_id,
  }))
}

/** Devices a node still shows connected through it (after it stopped without closing them): now offline. */
export async function releaseNodeConnections(db: Executor, brokerId: string, at: Date): Promise<PresenceUpdated[]> {
  const rows = await db.execute(sql`
    update ${device} as d set is_active = false, connection_id = null, last_seen_at = greatest(d.last_seen_at, ${at.toISOString()}::timestamptz)
    from ${device} as o
    where o.id = d.id and d.connection_id like ${`${brokerId.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`}
    returning d.id, d.user_id, d.organization_id, d.name, o.is_active as was_active, o.connection_id as previous_connection_id`)
  return rowsOf<{
    id: string
    user_id: string
    organization_id: string | null
    name: string
    was_active: boolean
    previous_connection_id: string | null
  }>(rows).map((r) => ({
    id: r.id,
    userId: r.user_id,
    organizationId: r.organization_id,
    name: r.name,
    wasActive: Boolean(r.was_active),
    previousConnectionId: r.previous_connection_id,
  }))
}

/** The nodes ("<broker id>" of connection ids) the database shows holding device connections. */
export async function nodesHoldingDevices(db: Executor): Promise<string[]> {
  const rows = await db.execute(
    sql`select distinct split_part(connection_id, '/', 1) as node from ${device} where connection_id is not null`,
  )
  return rowsOf<{ node: string }>(rows).map((r) => r.node)
}

/** Stores what the device reported and recomputes isSynced against the desired state, in one statement. */
export async function applyDeviceReport(db: Executor, id: string, report: DeviceReport): Promise<DeviceRow | undefined> {
  const shown = report.shownImageId ?? null
  const [row] = await db
    .update(device)
    .set({
      reported: report,
      lastSeenAt: new Date(),
      isSynced: sql`(${device.desiredConfigVersion} = ${report.configVersion ?? -1}) AND (${device.desiredImageId} IS NOT DISTINCT FROM ${shown})`,
      ...(report.firmware ? { info: sql`${device.info} || ${JSON.stringify({ firmware: report.firmware })}::jsonb` } : {}),
    })
    .where(eq(device.id, id))
    .returning()
  return row
}

/** A new desired config version or image: the device is out of sync until it reports it. */
export async function setDesiredState(
  db: Executor,
  id: string,
  change: { bumpConfig?: boolean; imageId?: string | null },
): Promise<DeviceRow | undefined> {
  const [row] = await db
    .update(device)
    .set({
      isSynced: false,
      updatedAt: new Date(),
      ...(change.bumpConfig ? { desiredConfigVersion: sql`${device.desiredConfigVersion} + 1` } : {}),
      ...(change.imageId !== undefined ? { desiredImageId: change.imageId } : {}),
    })
    .where(eq(device.id, id))
    .returning()
  return row
}

/** setDesiredState for many devices at once, each with its image and a new config version. */
export async function setDesiredImages(db: Executor, changes: ReadonlyArray<{ id: string; imageId: string }>): Promise<DeviceRow[]> {
  if (!changes.length) return []
  const image = sql.join(
    changes.map((c) => sql`WHEN ${c.id} THEN ${c.imageId}`),
    sql` `,
  )
  return db
    .update(device)
    .set({
      isSynced: false,
      updatedAt: new Date(),
      desiredConfigVersion: sql`${device.desiredConfigVersion} + 1`,
      desiredImageId: sql`CASE ${device.id} ${image} END`,
    })
    .where(
      inArray(
        device.id,
        changes.map((c) => c.id),
      ),
    )
    .returning()
}

export type DeviceCommandRow = typeof deviceCommand.$inferSelect

export async function insertCommand(db: Executor, row: typeof deviceCommand.$inferInsert): Promise<DeviceCommandRow> {
  const [created] = await db.insert(deviceCommand).values(row).returning()
  return created as DeviceCommandRow
}

export async function ackCommand(
  db: Executor,
  deviceId: string,
  commandId: string,
  result: Record<string, unknown>,
): Promise<DeviceCommandRow | undefined> {
  const [row] = await db
    .update(deviceCommand)
    .set({ status: result.ok === false ? 'failed' : 'acked', ackedAt: new Date(), result })
    .where(and(eq(deviceCommand.id, commandId), eq(deviceCommand.deviceId, deviceId), eq(deviceCommand.status, 'sent')))
    .returning()
  return row
}
