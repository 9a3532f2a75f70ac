import { randomUUID } from 'node:crypto'
import { and, count, desc, eq, gte } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { olderThan, type Cursor } from '../db/paging.js'
import { event } from './tables.js'

export type EventRow = typeof event.$inferSelect
export type NewEvent = {
  type: string
  deviceId?: string | null
  userId?: string | null
  organizationId?: string | null
  data?: Record<string, unknown>
}

export async function insertEvent(db: Executor, e: NewEvent): Promise<EventRow> {
  const [row] = await db
    .insert(event)
    .values({
      id: randomUUID(),
      type: e.type,
      deviceId: e.deviceId ?? null,
      userId: e.userId ?? null,
      organizationId: e.organizationId ?? null,
      data: e.data ?? {},
    })
    .returning()
  return row as EventRow
}

/**
 * Several events in one statement, each with its own time (when the broker saw it, not when the
 * batch was written). Returns the rows stored: a disconnect of a connection that already has one is skipped.
 */
export async function insertEvents(db: Executor, events: ReadonlyArray<NewEvent & { at: Date }>): Promise<EventRow[]> {
  const rows: EventRow[] = []
  // PostgreSQL's protocol allows 65,535 parameters per statement (7 per event): a node that comes
  // back after a crash records thousands of disconnects at once.
  for (let i = 0; i < events.length; i += EVENTS_PER_INSERT) {
    const chunk = events.slice(i, i + EVENTS_PER_INSERT)
    rows.push(
      ...(await db
        .insert(event)
        .values(
          chunk.map((e) => ({
            id: randomUUID(),
            type: e.type,
            deviceId: e.deviceId ?? null,
            userId: e.userId ?? null,
            organizationId: e.organizationId ?? null,
            data: e.data ?? {},
            createdAt: e.at,
          })),
        )
        // A connection's disconnect already recorded by another node is not recorded twice.
        .onConflictDoNothing()
        .returning()),
    )
  }
  return rows
}

const EVENTS_PER_INSERT = 2000

/** Newest first; `cursor` is the last row of the previous page. */
export async function listDeviceEvents(db: Executor, deviceId: string, limit: number, cursor?: Cursor): Promise<EventRow[]> {
  const after = olderThan(event.createdAt, event.id, cursor)
  return db
    .select()
    .from(event)
    .where(and(eq(event.deviceId, deviceId), after))
    .orderBy(desc(event.createdAt), desc(event.id))
    .limit(limit)
}

export async function deleteDeviceEvents(db: Executor, deviceId: string): Promise<void> {
  await db.delete(event).where(eq(event.deviceId, deviceId))
}

/** How many events of `type` were recorded at or after `since` (the benchmarks wait on this). */
export async function countEvents(db: Executor, type: string, since: Date): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(event)
    .where(and(eq(event.type, type), gte(event.createdAt, since)))
  return row?.n ?? 0
}
