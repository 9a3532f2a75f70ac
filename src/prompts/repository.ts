import { and, desc, eq } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { olderThan, type Cursor } from '../db/paging.js'
import { prompt } from './tables.js'

export type PromptRow = typeof prompt.$inferSelect

export async function insertPrompt(db: Executor, row: typeof prompt.$inferInsert): Promise<PromptRow> {
  const [created] = await db.insert(prompt).values(row).returning()
  return created as PromptRow
}

export async function findPrompt(db: Executor, id: string): Promise<PromptRow | undefined> {
  const [row] = await db.select().from(prompt).where(eq(prompt.id, id)).limit(1)
  return row
}

/** Newest first; `cursor` is the last row of the previous page. */
export async function listDevicePrompts(db: Executor, deviceId: string, limit: number, cursor?: Cursor): Promise<PromptRow[]> {
  const after = olderThan(prompt.createdAt, prompt.id, cursor)
  return db
    .select()
    .from(prompt)
    .where(and(eq(prompt.deviceId, deviceId), after))
    .orderBy(desc(prompt.createdAt), desc(prompt.id))
    .limit(limit)
}
