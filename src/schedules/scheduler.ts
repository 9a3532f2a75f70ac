// Fires due schedule turns. The due work is rows in the database (device_schedule.next_at), claimed
// in batches with a lease and SKIP LOCKED, so two instances never take the same device at once.
// The lease is short and renewed while a batch is worked on: a crashed instance's claims come free
// within one lease (shorter than the shortest turn), and a restarted one lets go of its earlier
// run's claims at start. Time comes from an injected clock: tests and the benchmark move it
// instead of waiting.
import { randomUUID } from 'node:crypto'
import type { Database } from '../db/client.js'
import { claimDueSchedules, finishTurns, nextDueAt, releaseNodeLeases, renewLeases, type ScheduleRow } from './repository.js'
import type { ScheduleCurrent } from './tables.js'

type Done = { nextAt: Date | null; current: ScheduleCurrent | null }

export type SchedulerOptions<Memo> = {
  db: Database
  clock: () => Date
  /** Reads what a claimed batch's turns share, once for the batch. */
  prepare: (rows: ScheduleRow[]) => Promise<Memo>
  fire: (row: ScheduleRow, now: Date, memo: Memo) => Promise<Done>
  /** Sends what the batch's turns left in the memo, together; answers the devices whose send failed. */
  flush: (memo: Memo) => Promise<ReadonlySet<string>>
  log: { error: (o: object, m?: string) => void; warn?: (o: object, m?: string) => void }
  /** This node's fixed id (kept across restarts): claims of its earlier runs are let go at start. */
  node: string
  /** Longest wait between two looks (a plan saved on another instance is seen within it). */
  tickMs?: number
  /** Schedules claimed per statement, and fired at once. */
  batch?: number
  concurrency?: number
  leaseMs?: number
}

/** A turn that failed for a reason other than the item (the database away) is tried again this much later. */
const RETRY_MS = 60_000

export function createScheduler<Memo>(opts: SchedulerOptions<Memo>) {
  const { db, clock, log } = opts
  const tickMs = opts.tickMs ?? 1000
  const batch = opts.batch ?? 200
  const concurrency = opts.concurrency ?? 32
  // Renewed every third of it while a batch is worked on (converting new uploads may take long);
  // a crashed instance's claims come free after it.
  const leaseMs = opts.leaseMs ?? 30_000
  const owner = `${opts.node}/${randomUUID()}`
  const warn = (o: object, m: string) => (log.warn ? log.warn(o, m) : log.error(o, m))
  let timer: NodeJS.Timeout | undefined
  let running: Promise<number> | undefined
  let again = false
  let stopped = true

  /** A turn that failed for a reason other than its item (the database away) is looked at again a minute later. */
  type Recorded = Done & { deviceId: string; version: number }
  const retry = (row: ScheduleRow, now: Date): Recorded => ({
    deviceId: row.deviceId,
    version: row.version,
    nextAt: new Date(now.getTime() + RETRY_MS),
    current: row.current,
  })

  async function fireOne(row: ScheduleRow, now: Date, memo: Memo): Promise<Recorded> {
    try {
      return { deviceId: row.deviceId, version: row.version, ...(await opts.fire(row, now, memo)) }
    } catch (err) {
      log.error({ err, deviceId: row.deviceId }, 'a scheduled turn failed; trying again in a minute')
      return retry(row, now)
    }
  }

  /** Renews this instance's claims every third of a lease while a batch is in hand. */
  function holdClaims(): () => void {
    const timer = setInterval(
      () =>
        void renewLeases(db, owner, new Date(clock().getTime() + leaseMs)).catch((err) =>
          warn({ err }, 'could not renew the claims on schedule turns'),
        ),
      Math.max(100, Math.floor(leaseMs / 3)),
    )
    timer.unref()
    return () => clearInterval(timer)
  }

  /** Fires everything due now; resolves with how many turns this instance fired. */
  async function drain(): Promise<number> {
    const release = holdClaims()
    try {
      return await drainClaimed()
    } finally {
      release()
    }
  }

  async function drainClaimed(): Promise<number> {
    let fired = 0
    for (;;) {
      const now = clock()
      const rows = await claimDueSchedules(db, now, batch, leaseMs, owner)
      if (!rows.length) return fired
      const memo = await opts.prepare(rows)
      const done: Recorded[] = []
      for (let i = 0; i < rows.length; i += concurrency)
        done.push(...(await Promise.all(rows.slice(i, i + concurrency).map((r) => fireOne(r, now, memo)))))
      // Only the turns whose images could not be sent are looked at again; the others (a
      // generation started, a config sent) happened and are recorded.
      const failed = await opts.flush(memo)
      for (const [i, row] of rows.entries()) if (failed.has(row.deviceId)) done[i] = retry(row, now)
      // One statement records the batch; a turn whose plan was saved again meanwhile is not overwritten.
      fired += (await finishTurns(db, owner, done)).size
      if (rows.length < batch) return fired
    }
  }

  /** One look now (or right after the one running): what tests call after moving the clock. */
  async function tick(): Promise<number> {
    while (running) await running.catch(() => 0)
    running = drain().finally(() => {
      running = undefined
    })
    return running
  }

  function arm(delayMs: number) {
    if (stopped) return
    clearTimeout(timer)
    timer = setTimeout(loop, Math.max(0, delayMs))
    timer.unref()
  }

  async function loop() {
    try {
      await tick()
      while (again) {
        again = false
        await tick()
      }
      // Sleep until the next due turn, never longer than a tick.
      const next = await nextDueAt(db, clock())
      arm(next ? Math.min(tickMs, next.getTime() - clock().getTime()) : tickMs)
    } catch (err) {
      log.error({ err }, 'the scheduler could not look for due turns')
      arm(tickMs)
    }
  }

  return {
    tick,
    /** Lets go of this node's claims from an earlier run, then looks for due turns. */
    async start() {
      const released = await releaseNodeLeases(db, owner)
      if (released) warn({ released }, 'let go of schedule turns an earlier run of this node had claimed')
      stopped = false
      arm(0)
    },
    /** A plan was saved here: look now rather than at the next tick. */
    poke() {
      if (running) again = true
      else arm(0)
    },
    async close() {
      stopped = true
      clearTimeout(timer)
      await running?.catch(() => {})
    },
  }
}
