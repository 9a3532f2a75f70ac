// The day plan worked out at given instants, without a service: rotation order in both modes,
// windows across midnight, sleep winning over rules, the DST days in Europe/Berlin, and the
// input checks that name the field.
import t from 'tap'
import { checkPlan, itemIndex, PlanError, type SchedulePlan, turnAt, WEEKDAYS } from '../../src/schedules/plan.js'

const everyDay = [...WEEKDAYS]
const at = (iso: string) => new Date(iso)
const seconds = (n: number) => () => n

/** Every turn key met while stepping through [from, to) a minute at a time, in order. */
function turnsBetween(plan: SchedulePlan, from: string, to: string, itemSeconds: number): string[] {
  const keys: string[] = []
  for (let ms = Date.parse(from); ms < Date.parse(to); ms += 60_000) {
    const turn = turnAt(plan, new Date(ms), seconds(itemSeconds))
    if (turn.state === 'playing' && keys.at(-1) !== turn.key) keys.push(turn.key)
  }
  return keys
}

t.test('sequential goes round in order; shuffle is a fresh order each round, the same on every run', async (t) => {
  const seq = Array.from({ length: 8 }, (_, slot) => itemIndex('sequential', 3, slot, 'seed'))
  t.same(seq, [0, 1, 2, 0, 1, 2, 0, 1])
  const rounds = Array.from({ length: 6 }, (_, round) =>
    Array.from({ length: 5 }, (_, i) => itemIndex('shuffle', 5, round * 5 + i, 'dev@w')),
  )
  for (const r of rounds) t.same([...r].sort(), [0, 1, 2, 3, 4], 'each round shows every item once')
  t.ok(new Set(rounds.map((r) => r.join())).size > 1, 'the rounds are not all in one order')
  t.same(
    Array.from({ length: 5 }, (_, i) => itemIndex('shuffle', 5, i, 'dev@w')),
    rounds[0],
    'the same seed draws the same order (another instance, or after a restart)',
  )
  t.not(
    Array.from({ length: 5 }, (_, i) => itemIndex('shuffle', 5, i, 'other@w')).join(),
    rounds[0]!.join(),
    'another device draws its own order',
  )
  t.equal(itemIndex('sequential', 0, 3, 's'), -1, 'an empty list shows nothing')
})

t.test('turns inside a window follow the time per item, and the next change is the next turn or the window end', async (t) => {
  const plan: SchedulePlan = { timeZone: 'UTC', rules: [{ playlistId: 'p', days: everyDay, from: '08:00', to: '09:00' }], sleep: [] }
  const a = turnAt(plan, at('2026-06-01T08:00:00Z'), seconds(600))
  t.match(a, { state: 'playing', slot: 0, playlistId: 'p' })
  t.equal(a.nextChangeAt?.toISOString(), '2026-06-01T08:10:00.000Z')
  const b = turnAt(plan, at('2026-06-01T08:25:00Z'), seconds(600))
  t.match(b, { state: 'playing', slot: 2 })
  t.equal(turnAt(plan, at('2026-06-01T08:55:00Z'), seconds(600)).nextChangeAt?.toISOString(), '2026-06-01T09:00:00.000Z', 'the window end')
  const idle = turnAt(plan, at('2026-06-01T09:00:00Z'), seconds(600))
  t.match(idle, { state: 'idle' })
  t.equal(idle.nextChangeAt?.toISOString(), '2026-06-02T08:00:00.000Z', 'idle until the next window')
  t.match(
    turnAt(plan, at('2026-06-01T08:30:00Z'), () => undefined),
    { state: 'idle' },
    'an empty playlist plays nothing',
  )
})

t.test('a window that crosses midnight belongs to the day it starts; sleep across midnight wins over it', async (t) => {
  const plan: SchedulePlan = {
    timeZone: 'Europe/Berlin',
    rules: [{ playlistId: 'night', days: ['fri'], from: '22:00', to: '02:00' }],
    sleep: [{ from: '23:30', to: '06:30' }],
  }
  checkPlan(plan)
  // Friday 2026-06-05, Berlin is UTC+2.
  t.match(turnAt(plan, at('2026-06-05T20:30:00Z'), seconds(3600)), { state: 'playing', playlistId: 'night' }, 'Friday 22:30')
  const asleep = turnAt(plan, at('2026-06-05T22:00:00Z'), seconds(3600))
  t.match(asleep, { state: 'sleeping' }, 'Saturday 00:00 is inside the sleep window')
  t.equal(asleep.nextChangeAt?.toISOString(), '2026-06-06T04:30:00.000Z', 'sleeps until 06:30 local')
  t.match(turnAt(plan, at('2026-06-04T20:30:00Z'), seconds(3600)), { state: 'idle' }, 'Thursday 22:30: not a Friday rule')
  t.equal(
    turnAt(plan, at('2026-06-05T21:29:00Z'), seconds(3600)).nextChangeAt?.toISOString(),
    '2026-06-05T21:30:00.000Z',
    'the next change is falling asleep at 23:30',
  )
})

t.test('DST in Europe/Berlin: a rule at 02:30 fires once on the spring-forward day and once on the fall-back day', async (t) => {
  const plan: SchedulePlan = {
    timeZone: 'Europe/Berlin',
    rules: [{ playlistId: 'p', days: ['sun'], from: '02:30', to: '04:00' }],
    sleep: [],
  }
  // 2026-03-29: 02:00 → 03:00, so 02:30 does not exist; 2026-10-25: 03:00 → 02:00, so it exists twice.
  const spring = turnsBetween(plan, '2026-03-28T22:00:00Z', '2026-03-29T22:00:00Z', 24 * 3600)
  t.same(spring, ['rule0@2026-03-29T01:30:00.000Z#0'], 'once, at 03:30 CEST (the first minute after the gap)')
  const fall = turnsBetween(plan, '2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z', 24 * 3600)
  t.equal(fall.length, 1, 'once on the fall-back day')
  const ordinary = turnsBetween(plan, '2026-06-06T22:00:00Z', '2026-06-07T22:00:00Z', 24 * 3600)
  t.same(ordinary, ['rule0@2026-06-07T00:30:00.000Z#0'], 'an ordinary Sunday: 02:30 CEST')
  // A daily hour across the spring-forward night is one hour shorter in real time: the turns say so.
  const hourly: SchedulePlan = {
    timeZone: 'Europe/Berlin',
    rules: [{ playlistId: 'p', days: everyDay, from: '00:00', to: '06:00' }],
    sleep: [],
  }
  t.equal(
    turnsBetween(hourly, '2026-03-28T23:00:00Z', '2026-03-29T04:00:00Z', 3600).length,
    5,
    'five hours of turns from 00:00 to 06:00 that night',
  )
})

t.test('bad plans are refused naming the field', async (t) => {
  const ok: SchedulePlan = { timeZone: 'UTC', rules: [{ playlistId: 'p', days: ['mon'], from: '08:00', to: '09:00' }], sleep: [] }
  const refused = (plan: SchedulePlan) => {
    try {
      checkPlan(plan)
      return null
    } catch (err) {
      return err instanceof PlanError ? err.message : String(err)
    }
  }
  t.equal(refused(ok), null)
  t.match(refused({ ...ok, timeZone: 'Mars/Olympus' }), /^timeZone: "Mars\/Olympus" is not an IANA time zone/)
  t.match(refused({ ...ok, rules: [{ ...ok.rules[0]!, to: '08:00' }] }), /^rules\[0\]\.to: equals from/)
  t.match(refused({ ...ok, sleep: [{ from: '22:00', to: '22:00' }] }), /^sleep\[0\]\.to: equals from/)
  t.match(
    refused({ ...ok, rules: [...ok.rules, { playlistId: 'q', days: ['mon', 'tue'], from: '08:30', to: '10:00' }] }),
    /^rules\[1\]: overlaps rules\[0\] on mon/,
  )
  t.match(
    refused({
      ...ok,
      rules: [
        { playlistId: 'p', days: ['sun'], from: '23:00', to: '01:00' },
        { playlistId: 'q', days: ['mon'], from: '00:30', to: '02:00' },
      ],
    }),
    /^rules\[1\]: overlaps rules\[0\] on sun and mon/,
    'across the week’s end',
  )
  t.equal(
    refused({ ...ok, rules: [...ok.rules, { playlistId: 'q', days: ['mon'], from: '09:00', to: '10:00' }] }),
    null,
    'back to back is not an overlap',
  )
  t.equal(refused({ ...ok, rules: [{ playlistId: 'p', days: ['mon'], from: '00:00', to: '24:00' }] }), null, 'a whole day')
  t.match(refused({ ...ok, rules: [{ ...ok.rules[0]!, days: ['mon', 'mon'] }] }), /^rules\[0\]\.days: names a day twice/)
})
