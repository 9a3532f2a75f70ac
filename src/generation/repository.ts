// Generation jobs. A runner claims due jobs with a lease (FOR UPDATE SKIP LOCKED), so several
// instances can share the table and a crashed runner's jobs are taken over once its lease ends.
import { and, eq, inArray, sql } from 'drizzle-orm'
import { rowsOf, type Executor } from '../db/client.js'
import { generationJob, type JobStatus } from './tables.js'

export type JobRow = typeof generationJob.$inferSelect
export type NewJob = typeof generationJob.$inferInsert

export async function insertJob(db: Executor, row: NewJob): Promise<JobRow> {
  const [created] = await db.insert(generationJob).values(row).returning()
  return created as JobRow
}

export async function findJob(db: Executor, id: string): Promise<JobRow | undefined> {
  const [row] = await db.select().from(generationJob).where(eq(generationJob.id, id)).limit(1)
  return row
}

export async function claimDueJobs(db: Executor, now: Date, limit: number, leaseMs: number, providers?: string[]): Promise<JobRow[]> {
  const leaseUntil = new Date(now.getTime() + leaseMs)
  const providerFilter = providers && providers.length ? sql`AND provider IN (${sql.join(providers.map((p) => sql`${p}`), sql`, `)})` : sql``
  const rows = await db.execute(sql`
    UPDATE generation_job SET lease_until = ${leaseUntil.toISOString()}::timestamptz
    WHERE id IN (
      SELECT id FROM generation_job
      WHERE status IN ('queued', 'running') AND next_poll_at <= ${now.toISOString()}::timestamptz
        AND (lease_until IS NULL OR lease_until < ${now.toISOString()}::timestamptz) ${providerFilter}
      ORDER BY next_poll_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING id`)
  const ids = rowsOf<{ id: string }>(rows).map((r) => r.id)
  if (!ids.length) return []
  return db.select().from(generationJob).where(inArray(generationJob.id, ids))
}

/** Updates a job that is still in one of `from`; returns it, or undefined if it moved on (canceled, say). */
export async function updateJob(db: Executor, id: string, from: JobStatus[], set: Partial<NewJob>): Promise<JobRow | undefined> {
  const [row] = await db
    .update(generationJob)
    .set({ ...set, updatedAt: new Date() })
    .where(and(eq(generationJob.id, id), inArray(generationJob.status, from)))
    .returning()
  return row
}

export async function countUnfinished(db: Executor): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(generationJob).where(inArray(generationJob.status, ['queued', 'running']))
  return Number(row?.n ?? 0)
}

/** A deleted device's jobs stay the user's; they no longer deliver anywhere. */
export async function detachJobsFromDevice(db: Executor, deviceId: string): Promise<void> {
  await db.update(generationJob).set({ deviceId: null }).where(eq(generationJob.deviceId, deviceId))
}
