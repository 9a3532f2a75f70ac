// The pairing rules without the app: which code submissions find a record, the attempt limits per
// user and per record, a pin and a user code that disagree, expiry decided by the injected clock,
// and who may add a device to an organization. The repository is a stand-in typed by the real one
// (PairingRepository); test/devices/pairing.test.ts runs the same flow through the HTTP API.
import t from 'tap'
import { ATTEMPT_WINDOW_SECONDS, createPairingRules, lostClaimError, type PairingRepository } from '../../src/devices/pairing-rules.js'
import type { DeviceInitRow } from '../../src/devices/repository.js'
import type { AppError } from '../../src/errors.js'
import { memoryCounters } from '../../src/http/counters.js'

const T0 = Date.parse('2026-11-28T10:00:00Z')

function record(over: Partial<DeviceInitRow> = {}): DeviceInitRow {
  return {
    id: 'dev1',
    deviceCodeHash: 'hash',
    userCode: 'user-code-1',
    pinCode: 'BCDF-GHJK',
    status: 'pending',
    expiresAt: new Date(T0 + 600_000),
    interval: 5,
    lastPolledAt: null,
    failedAttempts: 0,
    display: { width: 800, height: 480, palette: 'bw', fit: 'cover' },
    info: {},
    userId: null,
    organizationId: null,
    eventId: null,
    createdAt: new Date(T0),
    decidedAt: null,
    credentialsIssuedAt: null,
    ...over,
  }
}

/** Records by id and members' roles by `org:user`: what the rules read, as the repository answers it. */
function memoryRepo(rows: DeviceInitRow[], roles: Record<string, string> = {}) {
  const byId = new Map(rows.map((r) => [r.id, { ...r }]))
  const lookups: unknown[] = []
  const repo: PairingRepository = {
    findDeviceInit: async (id) => byId.get(id),
    findDeviceInitByCode: async (code) => {
      lookups.push(code)
      return [...byId.values()].find((r) => (code.userCode ? r.userCode === code.userCode : r.pinCode === code.pinCode))
    },
    transitionDeviceInit: async (id, from, to) => {
      const r = byId.get(id)
      if (!r || !from.includes(r.status)) return undefined
      r.status = to
      return { ...r }
    },
    countFailedAttempt: async (id) => {
      const r = byId.get(id)
      if (!r) return 0
      r.failedAttempts += 1
      return r.failedAttempts
    },
    findMemberRole: async (org, user) => roles[`${org}:${user}`] ?? null,
  }
  return { repo, byId, lookups }
}

function setup(rows = [record()], opts: { roles?: Record<string, string>; now?: number } = {}) {
  const mem = memoryRepo(rows, opts.roles)
  let now = opts.now ?? T0
  const rules = createPairingRules({ repo: mem.repo, counters: memoryCounters(), now: () => now })
  return { ...mem, rules, setNow: (ms: number) => void (now = ms) }
}

/** The error code a promise is refused with (undefined when it is not). */
async function refusal(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
    return undefined
  } catch (err) {
    return (err as AppError).code
  }
}

t.test('a right pin or user code finds the pending record; the pin is read as people type it', async (t) => {
  const { rules } = setup()
  t.equal((await rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })).id, 'dev1')
  t.equal((await rules.resolveCode('u1', { pinCode: 'bcdf ghjk' })).id, 'dev1', 'lower case, a space instead of the dash')
  t.equal((await rules.resolveCode('u1', { userCode: 'user-code-1' })).id, 'dev1')
  t.equal((await rules.resolveCode('u1', { userCode: 'user-code-1', pinCode: 'BCDFGHJK' })).id, 'dev1', 'both, naming the same device')
})

t.test('no code at all is a validation error, not a wrong guess', async (t) => {
  const { rules } = setup()
  t.equal(await refusal(rules.resolveCode('u1', {})), 'VALIDATION_ERROR')
  for (let i = 0; i < 5; i++) await refusal(rules.resolveCode('u1', {}))
  t.equal((await rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })).id, 'dev1', 'and it is not counted')
})

t.test('wrong codes: five per user, then 429 with Retry-After, for any code (even the right one)', async (t) => {
  const { rules, lookups } = setup()
  for (let i = 0; i < 5; i++)
    t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'ZZZZ-ZZZZ' })), 'INVALID_CODE', `wrong code ${i + 1}`)
  const err = await rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' }).catch((e: AppError) => e)
  t.match(err, { code: 'TOO_MANY_ATTEMPTS', message: 'Too many wrong codes, try again later' })
  const retry = Number((err as AppError).headers['retry-after'])
  t.ok(retry > 0 && retry <= ATTEMPT_WINDOW_SECONDS, `retry-after ${retry} within the window`)
  t.equal(lookups.length, 5, 'a user over the limit is refused before any lookup')
  t.equal((await rules.resolveCode('u2', { pinCode: 'BCDF-GHJK' })).id, 'dev1', 'another user is not limited by it')
})

t.test('a pin that cannot be one is a wrong code without a lookup, and counts', async (t) => {
  const { rules, lookups } = setup()
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'AAAA-AAAA' })), 'INVALID_CODE', 'A is not in the alphabet')
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'BCDF-GHJ' })), 'INVALID_CODE', 'seven characters')
  t.equal(lookups.length, 0)
  for (let i = 0; i < 3; i++) await refusal(rules.resolveCode('u1', { pinCode: 'A' }))
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })), 'TOO_MANY_ATTEMPTS')
})

t.test('a pin and a user code naming different devices: wrong, counted against the user and the record', async (t) => {
  const { rules, byId } = setup([record(), record({ id: 'dev2', userCode: 'user-code-2', pinCode: 'LMNP-QRST' })])
  t.equal(await refusal(rules.resolveCode('u1', { userCode: 'user-code-1', pinCode: 'LMNP-QRST' })), 'INVALID_CODE')
  t.equal(byId.get('dev1')?.failedAttempts, 1, 'the record the user code named')
  t.equal(byId.get('dev2')?.failedAttempts, 0)
})

t.test('a record guessed at by many accounts locks after five failures, for everyone', async (t) => {
  const { rules, byId } = setup()
  for (let i = 0; i < 5; i++)
    t.equal(await refusal(rules.resolveCode(`guesser${i}`, { userCode: 'user-code-1', pinCode: 'ZZZZ-ZZZZ' })), 'INVALID_CODE')
  t.equal(byId.get('dev1')?.failedAttempts, 5)
  const err = await rules.resolveCode('owner', { pinCode: 'BCDF-GHJK' }).catch((e: AppError) => e)
  t.match(err, { code: 'TOO_MANY_ATTEMPTS', message: 'This code is locked after too many failed attempts, try again later' })
  t.ok(Number((err as AppError).headers['retry-after']) > 0)
})

t.test('expiry is decided by the clock: pending until expiresAt, expired from that instant on (and stored so)', async (t) => {
  const expiresAt = T0 + 600_000
  const { rules, byId, setNow } = setup()
  setNow(expiresAt - 1)
  t.equal((await rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })).status, 'pending', 'a millisecond before')
  t.equal(byId.get('dev1')?.status, 'pending')
  setNow(expiresAt)
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })), 'CODE_EXPIRED', 'at expiresAt')
  t.equal(byId.get('dev1')?.status, 'expired', 'expired on read, not only by the sweeper')
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })), 'CODE_EXPIRED', 'and stays so')
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'ZZZZ-ZZZZ' })), 'INVALID_CODE', 'an expired code is no wrong guess')
})

t.test('a code already decided is refused as used; an expired one as expired', async (t) => {
  for (const status of ['approved', 'active', 'denied', 'disconnected'] as const) {
    const { rules } = setup([record({ status })])
    t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })), 'CODE_ALREADY_USED', status)
  }
  const { rules } = setup([record({ status: 'expired' })])
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })), 'CODE_EXPIRED')
})

t.test('expiring on read loses to a concurrent decision: the decision is what the code is refused by', async (t) => {
  const mem = memoryRepo([record({ status: 'approved' })])
  const pending = record({ expiresAt: new Date(T0 - 1) })
  // The lookup saw it pending; by the expiring write another request had approved it.
  const repo: PairingRepository = { ...mem.repo, findDeviceInitByCode: async () => pending }
  const rules = createPairingRules({ repo, counters: memoryCounters(), now: () => T0 })
  t.equal(await refusal(rules.resolveCode('u1', { pinCode: 'BCDF-GHJK' })), 'CODE_ALREADY_USED')
  t.equal((await rules.expireIfDue(pending)).status, 'approved')
})

t.test('a claim for an organization needs its owner or admin; a refusal counts against the record', async (t) => {
  const roles = { 'org1:admin': 'admin', 'org1:owner': 'owner', 'org1:member': 'member', 'org1:both': 'member,admin' }
  const { rules, byId } = setup([record()], { roles })
  for (const user of ['member', 'stranger'])
    t.equal(await refusal(rules.admitClaim(user, { pinCode: 'BCDF-GHJK', organizationId: 'org1' })), 'FORBIDDEN', user)
  t.equal(byId.get('dev1')?.failedAttempts, 2)
  for (const user of ['admin', 'owner', 'both'])
    t.equal((await rules.admitClaim(user, { pinCode: 'BCDF-GHJK', organizationId: 'org1' })).id, 'dev1', user)
  t.equal((await rules.admitClaim('stranger', { pinCode: 'BCDF-GHJK' })).id, 'dev1', 'for oneself: no role needed')
  t.equal(await refusal(rules.admitClaim('admin', { pinCode: 'ZZZZ-ZZZZ', organizationId: 'org1' })), 'INVALID_CODE')
})

t.test('a claim that lost its record to another request: expired when it expired meanwhile, else used', async (t) => {
  const now = T0
  t.equal(lostClaimError({ status: 'expired', expiresAt: new Date(now + 60_000) }, now).code, 'CODE_EXPIRED')
  t.equal(lostClaimError({ status: 'pending', expiresAt: new Date(now) }, now).code, 'CODE_EXPIRED', 'at expiresAt')
  t.equal(lostClaimError({ status: 'pending', expiresAt: new Date(now + 1) }, now).code, 'CODE_ALREADY_USED')
  t.equal(lostClaimError({ status: 'approved', expiresAt: new Date(now + 60_000) }, now).code, 'CODE_ALREADY_USED')
  t.equal(lostClaimError(undefined, now).code, 'CODE_ALREADY_USED', 'deleted meanwhile')
})
