// Generation jobs. A runner claims due jobs with a lease (FOR UPDATE SKIP LOCKED), so several
// instances can share the table and a crashed runner's jobs are taken over once its lease ends.
import { and, eq, inArray, isNotNull, sql } from 'drizzle-orm'
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

export type ClaimFilter =
  /** Jobs of one provider: those it is already working on (polls), or those not yet started there. */
  | { provider: string; started: boolean }
  /** Jobs of providers this instance does not have, once past their deadline (so they end, refunded). */
  | { overdueOutside: string[] }

/** Leases up to `limit` due jobs matching `filter` (FOR UPDATE SKIP LOCKED: instances never claim the same job). */
export async function claimDueJobs(db: Executor, now: Date, limit: number, leaseMs: number, filter: ClaimFilter): Promise<JobRow[]> {
  if (limit <= 0) return []
  const at = now.toISOString()
  const leaseUntil = new Date(now.getTime() + leaseMs)
  const which =
    'provider' in filter
      ? sql`AND provider = ${filter.provider} AND provider_job_id IS ${filter.started ? sql`NOT NULL` : sql`NULL`}`
      : sql`AND deadline_at <= ${at}::timestamptz ${
          filter.overdueOutside.length
            ? sql`AND provider NOT IN (${sql.join(
                filter.overdueOutside.map((p) => sql`${p}`),
                sql`, `,
              )})`
            : sql``
        }`
  const rows = await db.execute(sql`
    UPDATE generation_job SET lease_until = ${leaseUntil.toISOString()}::timestamptz
    WHERE id IN (
      SELECT id FROM generation_job
      WHERE status IN ('queued', 'running') AND next_poll_at <= ${at}::timestamptz
        AND (lease_until IS NULL OR lease_until < ${at}::timestamptz) ${which}
      ORDER BY next_poll_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING id`)
  const ids = rowsOf<{ id: string }>(rows).map((r) => r.id)
  if (!ids.length) return []
  return db.select().from(generationJob).where(inArray(generationJob.id, ids))
}

/** When the next live job is due to be looked at (its poll, or the end of a lease on it); null when none is live. */
export async function nextJobDueAt(db: Executor): Promise<Date | null> {
  const [row] = await db
    .select({
      at: sql<
        string | null
      >`min(greatest(${generationJob.nextPollAt}, coalesce(${generationJob.leaseUntil}, ${generationJob.nextPollAt})))`,
    })
    .from(generationJob)
    .where(inArray(generationJob.status, ['queued', 'running']))
  return row?.at ? new Date(row.at) : null
}

/** Jobs a provider is working on for us (started there and not finished), across every instance. */
export async function countStartedJobs(db: Executor, provider: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(generationJob)
    .where(
      and(
        eq(generationJob.provider, provider),
        inArray(generationJob.status, ['queued', 'running']),
        isNotNull(generationJob.providerJobId),
      ),
    )
  return Number(row?.n ?? 0)
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

/** Ends every unfinished job's lease: for a runner that knows it is the only one (no cluster). */
export async function releaseLeases(db: Executor): Promise<number> {
  const rows = await db
    .update(generationJob)
    .set({ leaseUntil: null })
    .where(and(inArray(generationJob.status, ['queued', 'running']), isNotNull(generationJob.leaseUntil)))
    .returning({ id: generationJob.id })
  return rows.length
}
