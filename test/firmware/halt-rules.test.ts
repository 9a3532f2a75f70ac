// The firmware rollout's rules without the app: when failed attempts halt a rollout (the share and
// the minimum, at their boundaries), how an admin's change lifts a halt and restarts the count at
// the injected time, and who is offered what (a halted or paused rollout offers nothing).
// test/firmware/failures.test.ts and rollout.test.ts run the same through devices on MQTT.
import t from 'tap'
import type { RolloutRow } from '../../src/firmware/repository.js'
import { bucketOf, eligible, haltDue, mayHalt, offerFor, rolloutChange } from '../../src/firmware/rollout-rules.js'

const T0 = new Date('2026-11-28T10:00:00Z')
const T1 = new Date('2026-11-28T11:00:00Z')

type Thresholds = Pick<RolloutRow, 'releaseId' | 'haltedAt' | 'minAttempts' | 'maxFailureShare'>
const running = (over: Partial<Thresholds> = {}): Thresholds => ({
  releaseId: 'r2',
  haltedAt: null,
  minAttempts: 5,
  maxFailureShare: 0.2,
  ...over,
})
const ended = (failed: number, succeeded: number) => ({ failed, succeeded })

t.test('a rollout halts once enough attempts ended and more than the allowed share failed', async (t) => {
  t.equal(haltDue(running(), 'r2', ended(4, 0)), false, 'four failures: fewer than five ended')
  t.equal(haltDue(running(), 'r2', ended(5, 0)), true, 'five of five')
  t.equal(haltDue(running(), 'r2', ended(1, 4)), false, 'exactly the share (1 of 5) is allowed')
  t.equal(haltDue(running(), 'r2', ended(2, 3)), true, '2 of 5')
  t.equal(haltDue(running(), 'r2', ended(2, 8)), false, 'exactly the share (2 of 10)')
  t.equal(haltDue(running(), 'r2', ended(3, 8)), true, '3 of 11')
  t.equal(haltDue(running(), 'r2', ended(0, 100)), false, 'no failures')
  t.equal(haltDue(running({ maxFailureShare: 0 }), 'r2', ended(1, 4)), true, 'a share of 0: any failure, once enough ended')
  t.equal(haltDue(running({ maxFailureShare: 0 }), 'r2', ended(1, 3)), false, '…and not before')
  t.equal(haltDue(running({ minAttempts: 1 }), 'r2', ended(1, 0)), true, 'a minimum of 1')
  t.equal(haltDue(running({ maxFailureShare: 1 }), 'r2', ended(50, 0)), false, 'a share of 1 never halts')
})

t.test('only a running rollout of the failed release halts', async (t) => {
  t.equal(haltDue(undefined, 'r2', ended(5, 0)), false, 'no rollout (a pinned device’s failure)')
  t.equal(haltDue(running({ releaseId: 'r3' }), 'r2', ended(5, 0)), false, 'pointed at another release since')
  t.equal(haltDue(running({ haltedAt: T0 }), 'r2', ended(5, 0)), false, 'halted already: not again')
  t.equal(mayHalt(running(), 'r2'), true)
  t.equal(mayHalt(running({ haltedAt: T0 }), 'r2'), false)
  t.equal(mayHalt(running({ releaseId: 'r3' }), 'r2'), false)
  t.equal(mayHalt(undefined, 'r2'), false)
})

t.test('an admin’s change: a new target or a resume lifts the halt and counts afresh from now; others keep both', async (t) => {
  const halted = { releaseId: 'r2', paused: false, haltedAt: T0, countingSince: T0, maxFailureShare: 0.3, minAttempts: 10 }
  t.same(
    iso(rolloutChange(undefined, {}, 'r2', T1)),
    {
      paused: false,
      haltedAt: null,
      countingSince: T1.toISOString(),
      maxFailureShare: 0.2,
      minAttempts: 5,
    },
    'a first rollout: the defaults, counting from now',
  )
  t.same(
    iso(rolloutChange(halted, {}, 'r2', T1)),
    {
      paused: false,
      haltedAt: T0.toISOString(),
      countingSince: T0.toISOString(),
      maxFailureShare: 0.3,
      minAttempts: 10,
    },
    'another share of the same target: still halted, the count kept',
  )
  t.match(iso(rolloutChange(halted, {}, 'r3', T1)), { haltedAt: null, countingSince: T1.toISOString() }, 'a new target')
  t.match(
    iso(rolloutChange(halted, { paused: false }, 'r2', T1)),
    { haltedAt: null, countingSince: T1.toISOString() },
    'a resume said outright',
  )
  const pausedHalted = { ...halted, paused: true }
  t.match(iso(rolloutChange(pausedHalted, { paused: false }, 'r2', T1)), { paused: false, haltedAt: null, countingSince: T1.toISOString() })
  t.match(
    iso(rolloutChange(pausedHalted, {}, 'r2', T1)),
    { paused: true, haltedAt: T0.toISOString(), countingSince: T0.toISOString() },
    'paused stays paused',
  )
  t.match(
    iso(rolloutChange(halted, { paused: true }, 'r2', T1)),
    { paused: true, haltedAt: T0.toISOString(), countingSince: T0.toISOString() },
    'a pause keeps the halt',
  )
  t.match(
    iso(rolloutChange(halted, { maxFailureShare: 0.5, minAttempts: 3 }, 'r2', T1)),
    { maxFailureShare: 0.5, minAttempts: 3, haltedAt: T0.toISOString() },
    'new thresholds alone do not lift it',
  )
})

/** Dates as ISO text: tap's match does not compare a Date's time. */
function iso<R extends { haltedAt: Date | null; countingSince: Date }>(r: R) {
  return { ...r, haltedAt: r.haltedAt?.toISOString() ?? null, countingSince: r.countingSince.toISOString() }
}

/** A device id in bucket `b` (0–99) of every rollout. */
function idInBucket(b: number): string {
  for (let i = 0; ; i++) if (bucketOf(`dev-${i}`) === b) return `dev-${i}`
}

t.test('a halted or paused rollout offers nothing; a running one offers its share, never a downgrade', async (t) => {
  const r2 = { id: 'r2', model: 'frame', version: '1.1.0' }
  const device = idInBucket(30)
  const ctx = {
    deviceId: device,
    firmware: '1.0.0',
    fleetModel: 'frame',
    releaseId: null,
    state: null,
    percent: 50,
    paused: false,
    haltedAt: null,
  }
  t.equal(offerFor(ctx, undefined, r2), r2, 'running, in the share')
  t.equal(offerFor({ ...ctx, haltedAt: T0 }, undefined, r2), null, 'halted')
  t.equal(offerFor({ ...ctx, paused: true }, undefined, r2), null, 'paused')
  t.equal(offerFor({ ...ctx, percent: 30 }, undefined, r2), null, 'bucket 30 is outside a 30 % share')
  t.equal(offerFor({ ...ctx, percent: 31 }, undefined, r2), r2, 'and inside 31 %')
  t.equal(offerFor({ ...ctx, percent: null }, undefined, r2), null, 'no share')
  t.equal(offerFor({ ...ctx, fleetModel: null }, undefined, r2), null, 'not enrolled in the fleet')
  t.equal(offerFor({ ...ctx, fleetModel: 'other' }, undefined, r2), null, 'enrolled in another model’s fleet')
  t.equal(offerFor({ ...ctx, firmware: '1.2.0' }, undefined, r2), null, 'a rollout never goes down')
  t.equal(offerFor({ ...ctx, firmware: '1.1.0' }, undefined, r2), null, 'already running it')
  t.equal(offerFor({ ...ctx, firmware: 'nightly' }, undefined, r2), null, 'an unknown running version is not compared')
  t.equal(offerFor({ ...ctx, releaseId: 'r2', state: 'offered' }, undefined, r2), null, 'offered already')
  t.equal(offerFor({ ...ctx, releaseId: 'r2', state: 'failed' }, undefined, r2), null, 'a failure is not retried by itself')
  t.equal(offerFor({ ...ctx, releaseId: 'r2', state: 'withdrawn' }, undefined, r2), r2, 'a withdrawn offer comes back')
})

t.test('a pin wins over the rollout, halted or not, down as well as up; pinning a failed release retries it', async (t) => {
  const r1 = { id: 'r1', model: 'frame', version: '1.0.0' }
  const r2 = { id: 'r2', model: 'frame', version: '1.1.0' }
  const ctx = {
    deviceId: idInBucket(90),
    firmware: '1.1.0',
    fleetModel: null,
    releaseId: null,
    state: null,
    percent: 10,
    paused: false,
    haltedAt: T0,
  }
  t.equal(offerFor(ctx, r1, r2), r1, 'a downgrade by pin, on a halted rollout, outside its share')
  t.equal(offerFor({ ...ctx, firmware: '1.0.0' }, r1, r2), null, 'already running the pin')
  t.equal(offerFor({ ...ctx, releaseId: 'r1', state: 'failed' }, r1, r2), null)
  t.equal(offerFor({ ...ctx, releaseId: 'r1', state: 'failed' }, r1, r2, true), r1, 'retry')
  t.equal(offerFor({ ...ctx, releaseId: 'r1', state: 'offered' }, r1, r2, true), null, 'retry only a failure')
})

t.test('eligible: enrolled in the release model’s fleet, or pinned to that release', async (t) => {
  const r2 = { id: 'r2', model: 'frame' }
  t.equal(eligible({ fleetModel: 'frame', pinnedReleaseId: null }, r2), true)
  t.equal(eligible({ fleetModel: null, pinnedReleaseId: 'r2' }, r2), true)
  t.equal(eligible({ fleetModel: 'other', pinnedReleaseId: 'r1' }, r2), false)
  t.equal(eligible({ fleetModel: null, pinnedReleaseId: null }, r2), false)
})

t.test('buckets: 0–99, the same for the same id, spread over the range', async (t) => {
  const ids = Array.from({ length: 2000 }, (_, i) => `device-${i}`)
  const buckets = ids.map(bucketOf)
  t.ok(buckets.every((b) => Number.isInteger(b) && b >= 0 && b < 100))
  t.equal(bucketOf('device-7'), buckets[7])
  t.equal(new Set(buckets).size, 100, 'every bucket is used')
  const under50 = buckets.filter((b) => b < 50).length
  t.ok(under50 > 850 && under50 < 1150, `about half under 50 (${under50} of 2000)`)
})
