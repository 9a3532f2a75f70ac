import { and, asc, desc, eq, inArray, isNotNull, lte, or, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { member } from '../db/schema.js'
import { device } from '../devices/tables.js'
import { playlistItem } from '../schedules/tables.js'
import { screen, screenRender, type ScreenError } from './tables.js'

export type ScreenRow = typeof screen.$inferSelect
export type ScreenRenderRow = typeof screenRender.$inferSelect
export type DeviceShowing = typeof device.$inferSelect

export async function insertScreen(db: Executor, row: typeof screen.$inferInsert): Promise<ScreenRow> {
  const [created] = await db.insert(screen).values(row).returning()
  return created as ScreenRow
}

export async function findScreen(db: Executor, id: string): Promise<ScreenRow | undefined> {
  const [row] = await db.select().from(screen).where(eq(screen.id, id)).limit(1)
  return row
}

/** A user's own screens and their organizations' (newest first). */
export async function listScreens(db: Executor, userId: string, limit: number): Promise<ScreenRow[]> {
  const orgs = db.select({ id: member.organizationId }).from(member).where(eq(member.userId, userId))
  return db
    .select()
    .from(screen)
    .where(or(eq(screen.userId, userId), inArray(screen.organizationId, orgs)))
    .orderBy(desc(screen.createdAt), asc(screen.id))
    .limit(limit)
}

export async function updateScreen(db: Executor, id: string, changes: Partial<typeof screen.$inferInsert>): Promise<ScreenRow | undefined> {
  const [row] = await db
    .update(screen)
    .set({ ...changes, updatedAt: new Date() })
    .where(eq(screen.id, id))
    .returning()
  return row
}

/** Data arrived (webhook or fetch): stored, the error of the last fetch cleared. */
export async function setScreenData(db: Executor, id: string, data: unknown, at: Date): Promise<ScreenRow | undefined> {
  const [row] = await db
    .update(screen)
    .set({ data: sql`${JSON.stringify(data ?? null)}::jsonb`, dataAt: at, lastError: null })
    .where(eq(screen.id, id))
    .returning()
  return row
}

export async function setScreenError(db: Executor, id: string, error: ScreenError | null, renderedAt?: Date): Promise<void> {
  await db
    .update(screen)
    .set({ lastError: error, ...(renderedAt ? { renderedAt } : {}) })
    .where(eq(screen.id, id))
}

export async function deleteScreen(db: Executor, id: string): Promise<boolean> {
  const rows = await db.delete(screen).where(eq(screen.id, id)).returning({ id: screen.id })
  return rows.length > 0
}

/**
 * Claims the screens whose data URL (or redraw, for a built-in screen without one) is due: moves each one's next fetch a period on in the same
 * statement (SKIP LOCKED), so two instances never fetch the same screen for the same turn.
 */
export async function claimDueSources(db: Executor, now: Date, limit: number): Promise<ScreenRow[]> {
  const due = db
    .select({ id: screen.id })
    .from(screen)
    .where(and(isNotNull(screen.sourceEverySeconds), lte(screen.nextFetchAt, now)))
    .orderBy(asc(screen.nextFetchAt))
    .limit(limit)
    .for('update', { skipLocked: true })
  return db
    .update(screen)
    .set({ nextFetchAt: sql`${now.toISOString()}::timestamptz + make_interval(secs => ${screen.sourceEverySeconds})` })
    .where(inArray(screen.id, due))
    .returning()
}

export async function findRender(db: Executor, screenId: string, key: string): Promise<ScreenRenderRow | undefined> {
  const [row] = await db
    .select()
    .from(screenRender)
    .where(and(eq(screenRender.screenId, screenId), eq(screenRender.key, key)))
    .limit(1)
  return row
}

export async function saveRender(db: Executor, row: typeof screenRender.$inferInsert): Promise<void> {
  await db
    .insert(screenRender)
    .values(row)
    .onConflictDoUpdate({
      target: [screenRender.screenId, screenRender.key],
      set: { imageId: row.imageId, pngSha256: row.pngSha256, sha256: row.sha256, renderedAt: row.renderedAt ?? new Date() },
    })
}

/** The frames showing a screen: those whose desired image is one the screen rendered. */
export async function findDevicesShowing(db: Executor, screenId: string): Promise<DeviceShowing[]> {
  const images = db.select({ id: screenRender.imageId }).from(screenRender).where(eq(screenRender.screenId, screenId))
  return db.select().from(device).where(inArray(device.desiredImageId, images))
}

/** Playlist items showing the screen: it may not be deleted from under them. */
export async function countPlaylistItemsUsing(db: Executor, screenId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(playlistItem)
    .where(and(eq(playlistItem.kind, 'screen'), eq(playlistItem.ref, screenId)))
  return row?.n ?? 0
}
