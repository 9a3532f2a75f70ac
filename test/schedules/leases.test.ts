// The scheduler's claims on due turns, on a real database without the app: a node killed with a
// batch claimed does not stall its frames until a long lease runs out. A restarted node lets go of
// its earlier run's claims at start; another node takes a dead node's turns over once their short
// lease ends; a live node working on a long batch keeps its claims by renewing them.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { testDatabase } from '../helpers/app.js'
import { user } from '../../src/db/schema.js'
import type { Database } from '../../src/db/client.js'
import { device } from '../../src/devices/tables.js'
import { claimDueSchedules, type ScheduleRow } from '../../src/schedules/repository.js'
import { createScheduler } from '../../src/schedules/scheduler.js'
import { deviceSchedule } from '../../src/schedules/tables.js'

const log = { error: () => {}, warn: () => {} }

async function dueSchedules(db: Database, n: number, at: Date): Promise<string[]> {
  const userId = randomUUID()
  await db.insert(user).values({ id: userId, name: 'Owner', email: `${userId}@example.com` })
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    const id = randomUUID()
    ids.push(id)
    await db
      .insert(device)
      .values({ id, name: `Frame ${i}`, userId, pinCode: 'BCDF-GHJK', display: { width: 800, height: 480, palette: 'bw' } })
    await db.insert(deviceSchedule).values({ deviceId: id, userId, timeZone: 'UTC', rules: [], sleep: [], nextAt: at })
  }
  return ids
}

/** A scheduler whose turns are counted; each turn is due again an hour later. */
function counting(db: Database, node: string, clock: () => Date, opts: { leaseMs: number; gate?: Promise<void> }) {
  const fired: string[] = []
  const scheduler = createScheduler({
    db,
    clock,
    node,
    log,
    leaseMs: opts.leaseMs,
    tickMs: 60_000,
    prepare: async () => ({}),
    fire: async (row: ScheduleRow, now: Date) => {
      await opts.gate
      fired.push(row.deviceId)
      return { nextAt: new Date(now.getTime() + 3_600_000), current: null }
    },
    flush: async () => new Set<string>(),
  })
  t.teardown(() => scheduler.close())
  return { scheduler, fired }
}

t.test('a node killed with turns claimed: its next run fires them at once, another node once their lease ends', async (t) => {
  const { db } = await testDatabase(t)
  let now = Date.parse('2026-06-01T08:00:00Z')
  const clock = () => new Date(now)
  const leaseMs = 30_000
  const ids = await dueSchedules(db, 3, clock())
  // What a run of node-a killed in the middle of a batch leaves: its claims, and nobody renewing them.
  const claimed = await claimDueSchedules(db, clock(), 10, leaseMs, 'node-a/dead-run')
  t.equal(claimed.length, 3, 'the dead run held all three')

  // node-b is driven by tick() alone: started, its own loop would look again on real-time timers
  // and, once the test has moved the clock, could claim the turns before the claims the test
  // writes for node-a's dead runs (flaky on PostgreSQL). start() is node-a's part below.
  const other = counting(db, 'node-b', clock, { leaseMs })
  await other.scheduler.tick()
  t.equal(other.fired.length, 0, 'another node does not take claims that may still be alive')

  const restarted = counting(db, 'node-a', clock, { leaseMs })
  await restarted.scheduler.start()
  await restarted.scheduler.tick()
  t.same(restarted.fired.sort(), [...ids].sort(), 'node-a, started again, fires all three turns at once')

  // node-a dies again holding the next turns; it does not come back this time. Its scheduler
  // stops first: still running, it may look again (its own timers) once the clock has moved and
  // claim the turns itself, before the claims of its "dead run" below are written.
  await restarted.scheduler.close()
  now += 3_600_000
  t.equal((await claimDueSchedules(db, clock(), 10, leaseMs, 'node-a/second-dead-run')).length, 3)
  await other.scheduler.tick()
  t.equal(other.fired.length, 0, 'within the lease, node-b waits')
  now += leaseMs + 1
  await other.scheduler.tick()
  t.equal(other.fired.length, 3, 'once the lease ran out (half a turn at most), node-b fires them')
})

t.test('a live node working on a long batch keeps its claims', async (t) => {
  const { db } = await testDatabase(t)
  const clock = () => new Date()
  const leaseMs = 600
  await dueSchedules(db, 2, clock())
  let open!: () => void
  const gate = new Promise<void>((resolve) => (open = resolve))
  const slow = counting(db, 'node-a', clock, { leaseMs, gate })
  const fast = counting(db, 'node-b', clock, { leaseMs })
  // node-a's look at start claims both turns, whose firing waits on the gate.
  await slow.scheduler.start()
  const working = slow.scheduler.tick()
  for (let i = 0; i < 200; i++) {
    const held = await db.select({ owner: deviceSchedule.leaseOwner }).from(deviceSchedule)
    if (held.every((r) => r.owner?.startsWith('node-a/'))) break
    await new Promise((r) => setTimeout(r, 20))
  }
  await fast.scheduler.start()
  // Several leases go by meanwhile.
  await new Promise((r) => setTimeout(r, leaseMs * 4))
  await fast.scheduler.tick()
  t.equal(fast.fired.length, 0, 'node-b takes none of the turns node-a is still working on')
  open()
  await working
  t.equal(slow.fired.length, 2, 'node-a fires both')
  await fast.scheduler.tick()
  t.equal(slow.fired.length + fast.fired.length, 2, 'and neither is fired a second time')
})
