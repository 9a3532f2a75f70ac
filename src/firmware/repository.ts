// The only module that reads or writes firmware releases, rollouts and devices' offers.
import { and, asc, count, desc, eq, inArray, isNull, or, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { device } from '../devices/tables.js'
import { deviceMessage } from '../downlink/tables.js'
import { deviceFirmware, type FirmwareChannel, firmwareRelease, firmwareRollout, type OtaState } from './tables.js'

export type ReleaseRow = typeof firmwareRelease.$inferSelect
export type RolloutRow = typeof firmwareRollout.$inferSelect
export type DeviceFirmwareRow = typeof deviceFirmware.$inferSelect
export type ReleaseCounts = { offered: number; pending: number; succeeded: number; failed: number; withdrawn: number }

const model = sql<string | null>`${device.info}->>'model'`
const firmware = sql<string | null>`${device.info}->>'firmware'`
const channelOf = sql<FirmwareChannel>`coalesce(${deviceFirmware.channel}, 'stable')`

/** Stores a release; undefined when the model already has that version. */
export async function insertRelease(db: Executor, row: typeof firmwareRelease.$inferInsert): Promise<ReleaseRow | undefined> {
  const [stored] = await db.insert(firmwareRelease).values(row).onConflictDoNothing().returning()
  return stored
}

export async function findRelease(db: Executor, id: string): Promise<ReleaseRow | undefined> {
  const [row] = await db.select().from(firmwareRelease).where(eq(firmwareRelease.id, id)).limit(1)
  return row
}

export async function findReleaseByVersion(db: Executor, modelName: string, version: string): Promise<ReleaseRow | undefined> {
  const [row] = await db
    .select()
    .from(firmwareRelease)
    .where(and(eq(firmwareRelease.model, modelName), eq(firmwareRelease.version, version)))
    .limit(1)
  return row
}

export async function findReleases(db: Executor, ids: string[]): Promise<ReleaseRow[]> {
  return ids.length ? db.select().from(firmwareRelease).where(inArray(firmwareRelease.id, ids)) : []
}

export async function listReleases(db: Executor, modelName?: string): Promise<ReleaseRow[]> {
  return db
    .select()
    .from(firmwareRelease)
    .where(modelName ? eq(firmwareRelease.model, modelName) : undefined)
    .orderBy(asc(firmwareRelease.model), desc(firmwareRelease.createdAt))
    .limit(500)
}

/** Deletes a release nothing refers to; false when a rollout, a pin or an offer still does. */
export async function deleteUnusedRelease(db: Executor, id: string): Promise<ReleaseRow | 'in-use' | undefined> {
  const [used] = await db
    .select({ n: count() })
    .from(deviceFirmware)
    .where(or(eq(deviceFirmware.releaseId, id), eq(deviceFirmware.pinnedReleaseId, id)))
  const [target] = await db.select({ n: count() }).from(firmwareRollout).where(eq(firmwareRollout.releaseId, id))
  if ((used?.n ?? 0) > 0 || (target?.n ?? 0) > 0) return 'in-use'
  const [row] = await db.delete(firmwareRelease).where(eq(firmwareRelease.id, id)).returning()
  return row
}

/** Offered, pending, succeeded, failed and withdrawn devices per release. */
export async function releaseCounts(db: Executor, ids: string[]): Promise<Map<string, ReleaseCounts>> {
  const out = new Map<string, ReleaseCounts>(ids.map((id) => [id, { offered: 0, pending: 0, succeeded: 0, failed: 0, withdrawn: 0 }]))
  if (!ids.length) return out
  const rows = await db
    .select({ releaseId: deviceFirmware.releaseId, state: deviceFirmware.state, n: count() })
    .from(deviceFirmware)
    .where(inArray(deviceFirmware.releaseId, ids))
    .groupBy(deviceFirmware.releaseId, deviceFirmware.state)
  for (const r of rows) {
    const c = out.get(r.releaseId as string)
    if (!c || !r.state) continue
    c.offered += r.n
    if (r.state === 'succeeded') c.succeeded += r.n
    else if (r.state === 'failed') c.failed += r.n
    else if (r.state === 'withdrawn') c.withdrawn += r.n
    else c.pending += r.n
  }
  return out
}

/** Devices offered a release, with where each got to (newest change first). */
export async function releaseDevices(db: Executor, releaseId: string, limit: number) {
  return db
    .select({
      deviceId: deviceFirmware.deviceId,
      name: device.name,
      firmware,
      state: deviceFirmware.state,
      reason: deviceFirmware.reason,
      offeredAt: deviceFirmware.offeredAt,
      updatedAt: deviceFirmware.updatedAt,
    })
    .from(deviceFirmware)
    .innerJoin(device, eq(device.id, deviceFirmware.deviceId))
    .where(eq(deviceFirmware.releaseId, releaseId))
    .orderBy(desc(deviceFirmware.updatedAt))
    .limit(limit)
}

export async function upsertRollout(db: Executor, row: typeof firmwareRollout.$inferInsert): Promise<RolloutRow> {
  const { model: m, channel, ...rest } = row
  const [stored] = await db
    .insert(firmwareRollout)
    .values(row)
    .onConflictDoUpdate({ target: [firmwareRollout.model, firmwareRollout.channel], set: rest })
    .returning()
  return stored as RolloutRow
}

export async function findRollout(db: Executor, modelName: string, channel: FirmwareChannel): Promise<RolloutRow | undefined> {
  const [row] = await db
    .select()
    .from(firmwareRollout)
    .where(and(eq(firmwareRollout.model, modelName), eq(firmwareRollout.channel, channel)))
    .limit(1)
  return row
}

/** The rollout, locked until the transaction ends: halt checks of concurrent failure reports take turns and each sees the others' reports. */
export async function lockRollout(db: Executor, modelName: string, channel: FirmwareChannel): Promise<RolloutRow | undefined> {
  const [row] = await db
    .select()
    .from(firmwareRollout)
    .where(and(eq(firmwareRollout.model, modelName), eq(firmwareRollout.channel, channel)))
    .limit(1)
    .for('update')
  return row
}

export async function listRollouts(db: Executor): Promise<RolloutRow[]> {
  return db.select().from(firmwareRollout).orderBy(asc(firmwareRollout.model), asc(firmwareRollout.channel))
}

/** Marks the rollout halted unless it already is (or moved to another release); answers it when this call halted it. */
export async function haltRollout(db: Executor, modelName: string, channel: FirmwareChannel, releaseId: string, at: Date) {
  const [row] = await db
    .update(firmwareRollout)
    .set({ haltedAt: at })
    .where(
      and(
        eq(firmwareRollout.model, modelName),
        eq(firmwareRollout.channel, channel),
        eq(firmwareRollout.releaseId, releaseId),
        isNull(firmwareRollout.haltedAt),
      ),
    )
    .returning()
  return row
}

/** What deciding a device's offer needs, in one query: its model and firmware, channel, pin, offer and rollout. */
export type OfferContext = {
  deviceId: string
  userId: string
  organizationId: string | null
  model: string | null
  firmware: string | null
  channel: FirmwareChannel
  pinnedReleaseId: string | null
  /** The model an admin enrolled the device in the fleet of. */
  fleetModel: string | null
  releaseId: string | null
  state: OtaState | null
  rolloutReleaseId: string | null
  percent: number | null
  paused: boolean | null
  haltedAt: Date | null
}

function contextQuery(db: Executor) {
  return db
    .select({
      deviceId: device.id,
      userId: device.userId,
      organizationId: device.organizationId,
      model,
      firmware,
      channel: channelOf,
      pinnedReleaseId: deviceFirmware.pinnedReleaseId,
      fleetModel: deviceFirmware.fleetModel,
      releaseId: deviceFirmware.releaseId,
      state: deviceFirmware.state,
      rolloutReleaseId: firmwareRollout.releaseId,
      percent: firmwareRollout.percent,
      paused: firmwareRollout.paused,
      haltedAt: firmwareRollout.haltedAt,
    })
    .from(device)
    .leftJoin(deviceFirmware, eq(deviceFirmware.deviceId, device.id))
    .leftJoin(firmwareRollout, and(eq(firmwareRollout.model, model), eq(firmwareRollout.channel, channelOf)))
}

export async function offerContext(db: Executor, deviceId: string): Promise<OfferContext | undefined> {
  const [row] = await contextQuery(db).where(eq(device.id, deviceId)).limit(1)
  return row
}

/** Every device of a model's fleet on a channel that is not pinned: what a rollout change looks at. */
export async function rolloutCandidates(db: Executor, modelName: string, channel: FirmwareChannel): Promise<OfferContext[]> {
  return contextQuery(db).where(
    and(
      eq(model, modelName),
      eq(deviceFirmware.fleetModel, modelName),
      sql`${channelOf} = ${channel}`,
      isNull(deviceFirmware.pinnedReleaseId),
      sql`${device.secretHash} is not null`,
    ),
  )
}

export async function findDeviceFirmware(db: Executor, deviceId: string): Promise<DeviceFirmwareRow | undefined> {
  const [row] = await db.select().from(deviceFirmware).where(eq(deviceFirmware.deviceId, deviceId)).limit(1)
  return row
}

/** Sets a device's channel, pin (null clears it) and fleet enrollment (null takes it out). */
export async function setDeviceChoice(
  db: Executor,
  deviceId: string,
  choice: { channel?: FirmwareChannel; pinnedReleaseId?: string | null; fleetModel?: string | null },
): Promise<DeviceFirmwareRow> {
  const [row] = await db
    .insert(deviceFirmware)
    .values({
      deviceId,
      channel: choice.channel ?? 'stable',
      pinnedReleaseId: choice.pinnedReleaseId ?? null,
      fleetModel: choice.fleetModel ?? null,
    })
    .onConflictDoUpdate({ target: deviceFirmware.deviceId, set: choice })
    .returning()
  return row as DeviceFirmwareRow
}

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters a statement (5 a row here). */
const OFFERS_PER_INSERT = 5000

/** Records offers of one release to many devices. */
export async function recordOffers(db: Executor, deviceIds: string[], releaseId: string, at: Date): Promise<void> {
  for (let i = 0; i < deviceIds.length; i += OFFERS_PER_INSERT) {
    await db
      .insert(deviceFirmware)
      .values(
        deviceIds
          .slice(i, i + OFFERS_PER_INSERT)
          .map((deviceId) => ({ deviceId, releaseId, state: 'offered' as const, offeredAt: at, updatedAt: at })),
      )
      .onConflictDoUpdate({
        target: deviceFirmware.deviceId,
        set: { releaseId, state: 'offered', reason: null, offeredAt: at, updatedAt: at },
      })
  }
}

/**
 * Failed and succeeded attempts at a release through a rollout (channel, not pinned) that ended
 * since `since`, by devices enrolled in the fleet of the release's model only: a device nobody
 * vouched for does not count, whatever it says it is.
 */
export async function haltCounts(db: Executor, release: { id: string; model: string }, channel: FirmwareChannel, since: Date) {
  const rows = await db
    .select({ state: deviceFirmware.state, n: count() })
    .from(deviceFirmware)
    .where(
      and(
        eq(deviceFirmware.releaseId, release.id),
        eq(deviceFirmware.fleetModel, release.model),
        eq(deviceFirmware.channel, channel),
        isNull(deviceFirmware.pinnedReleaseId),
        inArray(deviceFirmware.state, ['failed', 'succeeded']),
        sql`${deviceFirmware.updatedAt} >= ${since.toISOString()}::timestamptz`,
      ),
    )
    .groupBy(deviceFirmware.state)
  const n = (s: string) => rows.find((r) => r.state === s)?.n ?? 0
  return { failed: n('failed'), succeeded: n('succeeded') }
}

/** Devices holding an offer of a release through a rollout (channel, not pinned) that they have not started on. */
export async function untakenOffers(db: Executor, releaseId: string, channel: FirmwareChannel): Promise<string[]> {
  const rows = await db
    .select({ deviceId: deviceFirmware.deviceId })
    .from(deviceFirmware)
    .where(
      and(
        eq(deviceFirmware.releaseId, releaseId),
        eq(deviceFirmware.channel, channel),
        eq(deviceFirmware.state, 'offered'),
        isNull(deviceFirmware.pinnedReleaseId),
      ),
    )
  return rows.map((r) => r.deviceId)
}

/** Marks these devices' untaken offers of a release withdrawn; answers the devices it changed. */
export async function withdrawOffers(db: Executor, releaseId: string, deviceIds: string[], at: Date): Promise<string[]> {
  if (!deviceIds.length) return []
  const rows = await db
    .update(deviceFirmware)
    .set({ state: 'withdrawn', updatedAt: at })
    .where(and(eq(deviceFirmware.releaseId, releaseId), eq(deviceFirmware.state, 'offered'), inArray(deviceFirmware.deviceId, deviceIds)))
    .returning({ deviceId: deviceFirmware.deviceId })
  return rows.map((r) => r.deviceId)
}

/**
 * Moves a device's offer of `releaseId` to `state`, unless it already ended (succeeded or
 * failed) or the device has since been offered another release; answers the row when it moved.
 */
export async function setOfferState(
  db: Executor,
  deviceId: string,
  releaseId: string,
  state: OtaState,
  reason: string | null,
  at: Date,
): Promise<DeviceFirmwareRow | undefined> {
  const [row] = await db
    .update(deviceFirmware)
    .set({ state, reason, updatedAt: at })
    .where(
      and(
        eq(deviceFirmware.deviceId, deviceId),
        eq(deviceFirmware.releaseId, releaseId),
        sql`${deviceFirmware.state} not in ('succeeded', 'failed')`,
      ),
    )
    .returning()
  return row
}

/**
 * Offers not taken up whose message the outbox does not hold (the device's newest `ota` message
 * is not this offer): what an earlier version killed between recording offers and queueing them
 * left behind, or an offer whose message was pruned before the device took it.
 */
export async function unqueuedOffers(db: Executor): Promise<Array<{ deviceId: string; releaseId: string }>> {
  const newest = sql<string | null>`(select ${deviceMessage.payload}->>'releaseId' from ${deviceMessage}
    where ${deviceMessage.deviceId} = ${deviceFirmware.deviceId} and ${deviceMessage.kind} = 'ota'
    order by ${deviceMessage.seq} desc limit 1)`
  const rows = await db
    .select({ deviceId: deviceFirmware.deviceId, releaseId: deviceFirmware.releaseId })
    .from(deviceFirmware)
    .where(
      and(
        eq(deviceFirmware.state, 'offered'),
        // Still chosen for it: enrolled in the fleet of the release's own model, or pinned to it.
        or(
          sql`${deviceFirmware.fleetModel} = (select ${firmwareRelease.model} from ${firmwareRelease} where ${firmwareRelease.id} = ${deviceFirmware.releaseId})`,
          eq(deviceFirmware.pinnedReleaseId, deviceFirmware.releaseId),
        ),
        sql`coalesce(${newest}, '') <> ${deviceFirmware.releaseId}`,
      ),
    )
  return rows.filter((r): r is { deviceId: string; releaseId: string } => Boolean(r.releaseId))
}
