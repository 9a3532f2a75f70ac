import { and, desc, eq, gte, ilike, inArray, lt, lte, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { type Cursor, olderThan } from '../db/paging.js'
import { deviceLog, deviceLogStats, type LogLevel } from './tables.js'

export type DeviceLogRow = typeof deviceLog.$inferSelect
export type DeviceLogStatsRow = typeof deviceLogStats.$inferSelect
export type LogCounts = { accepted: number; droppedRate: number; droppedSize: number; droppedInvalid: number; pruned: number }

export async function insertLogs(db: Executor, rows: Array<typeof deviceLog.$inferInsert>): Promise<void> {
  if (rows.length) await db.insert(deviceLog).values(rows)
}

/** Removes a device's entries past the newest `keep`; answers how many went. */
export async function pruneToCount(db: Executor, deviceId: string, keep: number): Promise<number> {
  const gone = await db
    .delete(deviceLog)
    .where(
      inArray(
        deviceLog.id,
        db
          .select({ id: deviceLog.id })
          .from(deviceLog)
          .where(eq(deviceLog.deviceId, deviceId))
          // By arrival, not by the device's clock: a device set to 1970 cannot have its new entries pruned first.
          .orderBy(desc(deviceLog.receivedAt), desc(deviceLog.id))
          .offset(keep),
      ),
    )
    .returning({ deviceId: deviceLog.deviceId })
  return gone.length
}

/** Removes every entry older than `before`; answers how many went per device. */
export async function pruneOlderThan(db: Executor, before: Date): Promise<Map<string, number>> {
  const gone = await db.delete(deviceLog).where(lt(deviceLog.receivedAt, before)).returning({ deviceId: deviceLog.deviceId })
  const per = new Map<string, number>()
  for (const g of gone) per.set(g.deviceId, (per.get(g.deviceId) ?? 0) + 1)
  return per
}

/** Adds to a device's counts (creating its row on the first batch). */
export async function addCounts(db: Executor, deviceId: string, c: Partial<LogCounts>, lastAt?: Date): Promise<void> {
  const v = { accepted: 0, droppedRate: 0, droppedSize: 0, droppedInvalid: 0, pruned: 0, ...c }
  await db
    .insert(deviceLogStats)
    .values({ deviceId, ...v, lastAt: lastAt ?? null })
    .onConflictDoUpdate({
      target: deviceLogStats.deviceId,
      set: {
        accepted: sql`${deviceLogStats.accepted} + ${v.accepted}`,
        droppedRate: sql`${deviceLogStats.droppedRate} + ${v.droppedRate}`,
        droppedSize: sql`${deviceLogStats.droppedSize} + ${v.droppedSize}`,
        droppedInvalid: sql`${deviceLogStats.droppedInvalid} + ${v.droppedInvalid}`,
        pruned: sql`${deviceLogStats.pruned} + ${v.pruned}`,
        ...(lastAt ? { lastAt } : {}),
      },
    })
}

export async function findCounts(db: Executor, deviceId: string): Promise<DeviceLogStatsRow | undefined> {
  const [row] = await db.select().from(deviceLogStats).where(eq(deviceLogStats.deviceId, deviceId)).limit(1)
  return row
}

export type LogFilter = { levels: LogLevel[]; since?: Date; until?: Date; text?: string }

/** A device's entries, newest first, filtered; `cursor` is the last of the previous page (its `at` and id). */
export async function listLogs(db: Executor, deviceId: string, f: LogFilter, limit: number, cursor?: Cursor): Promise<DeviceLogRow[]> {
  // The text is matched literally: % and _ in it are not wildcards.
  const literal = f.text?.replace(/[\\%_]/g, (c) => `\\${c}`)
  return db
    .select()
    .from(deviceLog)
    .where(
      and(
        eq(deviceLog.deviceId, deviceId),
        inArray(deviceLog.level, f.levels),
        f.since ? gte(deviceLog.at, f.since) : undefined,
        f.until ? lte(deviceLog.at, f.until) : undefined,
        literal ? ilike(deviceLog.message, `%${literal}%`) : undefined,
        olderThan(deviceLog.at, deviceLog.id, cursor),
      ),
    )
    .orderBy(desc(deviceLog.at), desc(deviceLog.id))
    .limit(limit)
}
