// The only module that reads or writes device and device_init rows. State changes are
// compare-and-set updates: the WHERE clause names the state the caller saw.
import { randomUUID } from 'node:crypto'
import { and, desc, eq, inArray, lte, gt, or, sql } from 'drizzle-orm'
import { rowsOf, type Executor } from '../db/client.js'
import { member } from '../db/schema.js'
import { olderThan, type Cursor } from '../db/paging.js'
import { event } from '../events/tables.js'
import { device, deviceCommand, deviceInit, type DeviceInitStatus, type DeviceReport } from './tables.js'

export type DeviceRow = typeof device.$inferSelect
export type DeviceInitRow = typeof deviceInit.$inferSelect
export type NewDeviceInit = typeof deviceInit.$inferInsert
export type NewDevice = typeof device.$inferInsert
export type DevicePatch = Partial<Pick<DeviceRow, 'name' | 'icon' | 'color' | 'description' | 'selectedModel' | 'display'>>

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

/** The ids of every device an account owns (its own and those it paired into an organization). */
export async function deviceIdsOfUser(db: Executor, userId: string): Promise<string[]> {
  const rows = await db.select({ id: device.id }).from(device).where(eq(device.userId, userId))
  return rows.map((r) => r.id)
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
  // The same text for any number of ids (one JSON parameter): prepared once per connection, where
  // an IN list of its own length per batch would be parsed and planned anew each time.
  const rows = await db.execute(sql`
    select id, user_id, organization_id, name, secret_hash from ${device}
    where id = any(array(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)))`)
  return rowsOf<{ id: string; user_id: string; organization_id: string | null; name: string; secret_hash: string | null }>(rows).map(
    (r) => ({
      id: r.id,
      userId: r.user_id,
      organizationId: r.organization_id,
      name: r.name,
      secretHash: r.secret_hash,
    }),
  )
}

export type PresenceUpdated = Pick<DeviceRow, 'id' | 'userId' | 'organizationId' | 'name'> & {
  wasActive: boolean
  previousConnectionId?: string | null
}

/** One presence change of a device: its device row (unless `active` is undefined) and its event. */
export type PresenceChangeRow = {
  deviceId: string
  /** The device row's new isActive; undefined leaves the row as it is (a takeover's old connection). */
  active: boolean | undefined
  at: Date
  /** The live connection (MQTT); null for a device that polls and holds none. */
  connectionId: string | null
  type: string
  data: Record<string, unknown>
  userId: string | null
  organizationId: string | null
  /** Also read the device's newest event before this one, if it was inactive. */
  previousWhenInactive: boolean
  /** A connect stored as an event only when the device was inactive (a poll: every one is "seen", few are connects). */
  whenInactive?: boolean
  /**
   * A disconnect that applies only while the device is active and was last seen no later than
   * this (a poll since the sweep read it keeps it online); stored as an event only when it applied.
   */
  seenBefore?: Date
}

export type PresenceRecorded = {
  /** Devices updated, with whether they were active before and the connection they had. */
  updated: PresenceUpdated[]
  /** The newest event before these, of the devices asked for that were inactive. */
  previous: EventRow[]
  /** The events stored (a disconnect of a connection that already has one is skipped). */
  events: EventRow[]
}

type EventRow = {
  id: string
  type: string
  deviceId: string | null
  userId: string | null
  organizationId: string | null
  data: Record<string, unknown>
  createdAt: Date
}

/**
 * Records the presence changes of several devices in one statement (atomic by itself, so no
 * transaction and one round trip), whose text is the same for every batch: the batch travels as
 * one JSON parameter, so the statement is prepared once per connection and not planned anew.
 *
 * - Device rows: isActive, last_seen_at and the live connection. A connect always applies; a
 *   disconnect applies only while its connection is still the device's live one, so a device that
 *   already reconnected elsewhere (a takeover on another instance) is not marked offline.
 * - The previous event of devices that were inactive, when asked for (read from the statement's
 *   snapshot: the events inserted here are not among them).
 * - A connect that replaced a live connection the database still showed (the device moved to this
 *   node, or its node died before recording the end) also records that connection's disconnect,
 *   unless its own node already did (one disconnect per connection, by a unique index).
 * - A disconnect that did not apply (superseded) is recorded with reason "takeover".
 * - Every change's own event.
 */
export async function recordPresenceMany(db: Executor, changes: readonly PresenceChangeRow[]): Promise<PresenceRecorded> {
  if (!changes.length) return { updated: [], previous: [], events: [] }
  // Rows are locked in id order, so two instances writing overlapping batches cannot deadlock.
  // The function's row count is unknown to the planner (it assumes 100): the device rows are found
  // by `id = any(…)`, an index scan, not by a hash join over the whole table.
  const sorted = [...changes].sort((a, b) => (a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0))
  const batch = JSON.stringify(
    sorted.map((c) => ({
      device_id: c.deviceId,
      set_active: c.active ?? null,
      at: c.at.toISOString(),
      conn: c.connectionId,
      type: c.type,
      data: c.data,
      user_id: c.userId,
      organization_id: c.organizationId,
      want_previous: c.previousWhenInactive,
      when_inactive: c.whenInactive ?? false,
      seen_before: c.seenBefore?.toISOString() ?? null,
      event_id: randomUUID(),
      replaced_id: c.active ? randomUUID() : null,
    })),
  )
  const rows = await db.execute(sql`
    with w as (
      select * from jsonb_to_recordset(${batch}::jsonb) as w(device_id text, set_active boolean, at timestamptz, conn text, type text,
        data jsonb, user_id text, organization_id text, want_previous boolean, when_inactive boolean, seen_before timestamptz,
        event_id text, replaced_id text)
    ),
    u as (
      update ${device} as d set is_active = w.set_active, last_seen_at = greatest(d.last_seen_at, w.at),
        connection_id = case when w.set_active then w.conn else null end
      from w, ${device} as o
      where d.id = any(array(select device_id from w where set_active is not null))
        and w.set_active is not null and d.id = w.device_id and o.id = d.id and (w.set_active or o.connection_id is null or o.connection_id = w.conn)
        and (w.seen_before is null or (d.is_active and coalesce(d.last_seen_at, '-infinity') <= w.seen_before))
      returning d.id, d.user_id, d.organization_id, d.name, o.is_active as was_active, o.connection_id as previous_connection_id
    ),
    p as (
      select e.id, e.type, e.device_id, e.user_id, e.organization_id, e.data, e.created_at
      from u join w on w.device_id = u.id and w.want_previous and not u.was_active
      cross join lateral (
        select * from ${event} where ${event}.device_id = u.id order by ${event}.created_at desc, ${event}.id desc limit 1
      ) as e
    ),
    ins as (
      insert into ${event} (id, type, device_id, user_id, organization_id, data, created_at)
      select w.replaced_id, 'device.disconnected', w.device_id, w.user_id, w.organization_id,
        jsonb_build_object('reason', 'takeover', 'clientId', w.device_id, 'connectionId', u.previous_connection_id, 'replacedBy', w.conn),
        w.at - interval '1 millisecond'
      from w join u on u.id = w.device_id
      where w.set_active and u.previous_connection_id is not null and u.previous_connection_id <> '' and u.previous_connection_id <> w.conn
      union all
      select w.event_id, w.type, w.device_id, w.user_id, w.organization_id,
        case when w.set_active = false and u.id is null then w.data || '{"reason":"takeover"}'::jsonb else w.data end,
        w.at
      from w left join u on u.id = w.device_id
      where (not w.when_inactive or (u.id is not null and not u.was_active)) and (w.seen_before is null or u.id is not null)
      on conflict do nothing
      returning id, type, device_id, user_id, organization_id, data, created_at
    )
    select 'u' as k, to_jsonb(u) as r from u
    union all select 'p', to_jsonb(p) from p
    union all select 'e', to_jsonb(ins) from ins`)
  const out: PresenceRecorded = { updated: [], previous: [], events: [] }
  type Json = Record<string, unknown>
  const asEvent = (r: Json): EventRow => ({
    id: r.id as string,
    type: r.type as string,
    deviceId: (r.device_id as string | null) ?? null,
    userId: (r.user_id as string | null) ?? null,
    organizationId: (r.organization_id as string | null) ?? null,
    data: r.data as Record<string, unknown>,
    createdAt: new Date(r.created_at as string),
  })
  for (const row of rowsOf<{ k: string; r: Json | string }>(rows)) {
    const r = (typeof row.r === 'string' ? JSON.parse(row.r) : row.r) as Json
    if (row.k === 'u')
      out.updated.push({
        id: r.id as string,
        userId: r.user_id as string,
        organizationId: (r.organization_id as string | null) ?? null,
        name: r.name as string,
        wasActive: Boolean(r.was_active),
        previousConnectionId: (r.previous_connection_id as string | null) ?? null,
      })
    else if (row.k === 'p') out.previous.push(asEvent(r))
    else out.events.push(asEvent(r))
  }
  return out
}

/**
 * Devices the database shows connected through a broker that is gone (it stopped without closing
 * them): now offline. `brokerId` is one run of a node (`<node>~<run>`, whose connection ids start
 * with it), or a node, which releases every run of it.
 */
export async function releaseNodeConnections(db: Executor, brokerId: string, at: Date): Promise<PresenceUpdated[]> {
  const escaped = brokerId.replace(/[\\%_]/g, (c) => `\\${c}`)
  const rows = await db.execute(sql`
    update ${device} as d set is_active = false, connection_id = null, last_seen_at = greatest(d.last_seen_at, ${at.toISOString()}::timestamptz)
    from ${device} as o
    where o.id = d.id and (d.connection_id like ${`${escaped}/%`} or d.connection_id like ${`${escaped}~%`})
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
export async function setDesiredImages(
  db: Executor,
  changes: ReadonlyArray<{ id: string; imageId: string }>,
  opts: { bumpConfig?: boolean } = {},
): Promise<DeviceRow[]> {
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
      ...(opts.bumpConfig === false ? {} : { desiredConfigVersion: sql`${device.desiredConfigVersion} + 1` }),
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
