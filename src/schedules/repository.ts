import { and, asc, desc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm'
import { member } from '../db/schema.js'
import { rowsOf, type Executor } from '../db/client.js'
import { deviceSchedule, playlist, playlistItem, type ScheduleCurrent } from './tables.js'

export type PlaylistRow = typeof playlist.$inferSelect
export type PlaylistItemRow = typeof playlistItem.$inferSelect
export type ScheduleRow = typeof deviceSchedule.$inferSelect

export async function findPlaylist(db: Executor, id: string): Promise<PlaylistRow | undefined> {
  const [row] = await db.select().from(playlist).where(eq(playlist.id, id)).limit(1)
  return row
}

export async function findPlaylists(db: Executor, ids: string[]): Promise<PlaylistRow[]> {
  return ids.length ? db.select().from(playlist).where(inArray(playlist.id, ids)) : []
}

/** The user's own playlists and those of every organization they are a member of, newest first. */
export async function listPlaylists(db: Executor, userId: string, limit: number): Promise<PlaylistRow[]> {
  const orgs = db.select({ id: member.organizationId }).from(member).where(eq(member.userId, userId))
  return db
    .select()
    .from(playlist)
    .where(or(eq(playlist.userId, userId), inArray(playlist.organizationId, orgs)))
    .orderBy(desc(playlist.createdAt), desc(playlist.id))
    .limit(limit)
}

export async function insertPlaylist(db: Executor, row: typeof playlist.$inferInsert): Promise<PlaylistRow> {
  const [created] = await db.insert(playlist).values(row).returning()
  return created!
}

export async function updatePlaylist(
  db: Executor,
  id: string,
  patch: Partial<Pick<PlaylistRow, 'name' | 'mode' | 'itemSeconds'>>,
): Promise<PlaylistRow | undefined> {
  const [row] = await db
    .update(playlist)
    .set({ ...patch, updatedAt: new Date() })
    .where(eq(playlist.id, id))
    .returning()
  return row
}

export async function deletePlaylist(db: Executor, id: string): Promise<boolean> {
  const rows = await db.delete(playlist).where(eq(playlist.id, id)).returning({ id: playlist.id })
  return rows.length > 0
}

/** Holds the playlist row until the transaction ends: changes to its items then happen one at a time. */
export async function lockPlaylist(db: Executor, id: string): Promise<void> {
  await db.execute(sql`SELECT 1 FROM playlist WHERE id = ${id} FOR UPDATE`)
}

export async function listItems(db: Executor, playlistId: string): Promise<PlaylistItemRow[]> {
  return db.select().from(playlistItem).where(eq(playlistItem.playlistId, playlistId)).orderBy(asc(playlistItem.position))
}

export async function countItems(db: Executor, playlistId: string): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(playlistItem).where(eq(playlistItem.playlistId, playlistId))
  return row?.n ?? 0
}

export async function insertItem(db: Executor, row: typeof playlistItem.$inferInsert): Promise<PlaylistItemRow> {
  const [created] = await db.insert(playlistItem).values(row).returning()
  return created!
}

export async function deleteItem(db: Executor, playlistId: string, itemId: string): Promise<boolean> {
  const rows = await db
    .delete(playlistItem)
    .where(and(eq(playlistItem.playlistId, playlistId), eq(playlistItem.id, itemId)))
    .returning({ id: playlistItem.id })
  return rows.length > 0
}

/** Positions 0…n-1 in the given order (the caller checked it names every item once). */
export async function setPositions(db: Executor, playlistId: string, itemIds: string[]): Promise<void> {
  if (!itemIds.length) return
  const cases = sql.join(
    itemIds.map((id, i) => sql`WHEN ${id} THEN ${i}::int`),
    sql` `,
  )
  await db.execute(
    sql`UPDATE playlist_item SET position = CASE id ${cases} END WHERE playlist_id = ${playlistId} AND id IN (${sql.join(
      itemIds.map((id) => sql`${id}`),
      sql`, `,
    )})`,
  )
}

/** An upload's stored image for a display, once converted (see playlistItem.images). */
export async function rememberItemImage(db: Executor, itemId: string, profileKey: string, imageId: string): Promise<void> {
  await db
    .update(playlistItem)
    .set({ images: sql`${playlistItem.images} || ${JSON.stringify({ [profileKey]: imageId })}::jsonb` })
    .where(eq(playlistItem.id, itemId))
}

/** The items of several playlists at once, each list in position order. */
export async function listItemsOf(db: Executor, playlistIds: string[]): Promise<Map<string, PlaylistItemRow[]>> {
  const lists = new Map<string, PlaylistItemRow[]>(playlistIds.map((id) => [id, []]))
  if (!playlistIds.length) return lists
  const rows = await db.select().from(playlistItem).where(inArray(playlistItem.playlistId, playlistIds)).orderBy(asc(playlistItem.position))
  for (const r of rows) lists.get(r.playlistId)?.push(r)
  return lists
}

/** How many device schedules name the playlist in a rule. */
export async function countSchedulesUsing(db: Executor, playlistId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(deviceSchedule)
    .where(sql`${deviceSchedule.rules} @> ${JSON.stringify([{ playlistId }])}::jsonb`)
  return row?.n ?? 0
}

export async function findSchedule(db: Executor, deviceId: string): Promise<ScheduleRow | undefined> {
  const [row] = await db.select().from(deviceSchedule).where(eq(deviceSchedule.deviceId, deviceId)).limit(1)
  return row
}

/**
 * Saves a device's plan and makes it due at once (the scheduler then works out what plays now).
 * A batch holding the device keeps its lease; the new version stops it recording over the plan.
 */
export async function saveSchedule(
  db: Executor,
  row: Pick<ScheduleRow, 'deviceId' | 'userId' | 'timeZone' | 'rules' | 'sleep'>,
  now: Date,
): Promise<ScheduleRow> {
  const values = { ...row, nextAt: now, current: null, updatedAt: now }
  const [saved] = await db
    .insert(deviceSchedule)
    .values(values)
    .onConflictDoUpdate({ target: deviceSchedule.deviceId, set: { ...values, version: sql`${deviceSchedule.version} + 1` } })
    .returning()
  return saved!
}

export async function deleteSchedule(db: Executor, deviceId: string): Promise<boolean> {
  const rows = await db.delete(deviceSchedule).where(eq(deviceSchedule.deviceId, deviceId)).returning({ id: deviceSchedule.deviceId })
  return rows.length > 0
}

/**
 * Takes up to `limit` schedules that are due and not held by another instance, for `leaseMs`.
 * SKIP LOCKED: two instances asking at once get different rows, never the same one.
 */
export async function claimDueSchedules(db: Executor, now: Date, limit: number, leaseMs: number, owner: string): Promise<ScheduleRow[]> {
  const due = db
    .select({ id: deviceSchedule.deviceId })
    .from(deviceSchedule)
    .where(and(lte(deviceSchedule.nextAt, now), or(isNull(deviceSchedule.leaseUntil), lt(deviceSchedule.leaseUntil, now))))
    .orderBy(asc(deviceSchedule.nextAt))
    .limit(limit)
    .for('update', { skipLocked: true })
  // The rows as claimed, in the same statement: a plan saved a moment later is not read by mistake.
  return db
    .update(deviceSchedule)
    .set({ leaseUntil: new Date(now.getTime() + leaseMs), leaseOwner: owner })
    .where(inArray(deviceSchedule.deviceId, due))
    .returning()
}

/**
 * Records each fired turn of a claimed batch and when to look again, and lets go of the lease, in
 * one statement: only where this instance still holds it (a plan saved meanwhile cleared the
 * lease and must not be overwritten). Answers the device ids it recorded.
 */
export async function finishTurns(
  db: Executor,
  owner: string,
  done: ReadonlyArray<{ deviceId: string; version: number; nextAt: Date | null; current: ScheduleCurrent | null }>,
): Promise<Set<string>> {
  if (!done.length) return new Set()
  const values = sql.join(
    done.map(
      (d) =>
        sql`(${d.deviceId}::text, ${d.version}::int, ${d.nextAt?.toISOString() ?? null}::timestamptz, ${d.current ? JSON.stringify(d.current) : null}::jsonb)`,
    ),
    sql`, `,
  )
  // A plan saved while the batch ran has a new version and is due now: only the lease is let go.
  const rows = await db.execute(sql`
    UPDATE device_schedule AS s
    SET next_at = CASE WHEN s.version = v.version THEN v.next_at ELSE s.next_at END,
        current = CASE WHEN s.version = v.version THEN v.current ELSE s.current END,
        lease_until = NULL, lease_owner = NULL
    FROM (VALUES ${values}) AS v(device_id, version, next_at, current)
    WHERE s.device_id = v.device_id AND s.lease_owner = ${owner}
    RETURNING s.device_id`)
  return new Set(rowsOf<{ device_id: string }>(rows).map((r) => r.device_id))
}

/**
 * Keeps this instance's claims while it works on them: their lease runs `until` now. A crashed
 * instance renews nothing, so its claims come free within one lease.
 */
export async function renewLeases(db: Executor, owner: string, until: Date): Promise<number> {
  const rows = await db
    .update(deviceSchedule)
    .set({ leaseUntil: until })
    .where(eq(deviceSchedule.leaseOwner, owner))
    .returning({ id: deviceSchedule.deviceId })
  return rows.length
}

/**
 * Lets go of what earlier runs of this node still hold (it was killed with a batch claimed):
 * `owner` is the current run, `<node>/<run>`; nothing else of that node can be alive.
 */
export async function releaseNodeLeases(db: Executor, owner: string): Promise<number> {
  const node = owner.slice(0, owner.indexOf('/') + 1).replace(/[\\%_]/g, (c) => `\\${c}`)
  const rows = await db
    .update(deviceSchedule)
    .set({ leaseUntil: null, leaseOwner: null })
    .where(and(sql`${deviceSchedule.leaseOwner} like ${`${node}%`}`, sql`${deviceSchedule.leaseOwner} <> ${owner}`))
    .returning({ id: deviceSchedule.deviceId })
  return rows.length
}

/** The earliest due time among schedules nobody holds, so the loop can sleep until then. */
export async function nextDueAt(db: Executor, now: Date): Promise<Date | null> {
  const [row] = await db
    .select({ at: deviceSchedule.nextAt })
    .from(deviceSchedule)
    .where(and(sql`${deviceSchedule.nextAt} IS NOT NULL`, or(isNull(deviceSchedule.leaseUntil), lt(deviceSchedule.leaseUntil, now))))
    .orderBy(asc(deviceSchedule.nextAt))
    .limit(1)
  return row?.at ?? null
}
