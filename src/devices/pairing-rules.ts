// Which code submissions may claim or deny a pairing: attempt limits per user and per record, a
// pin and a user code that must name the same device, expiry on read, and the right to add
// devices to an organization. Given its repository and clock as parameters (the service passes
// the drizzle functions and the wall clock) so the rules are tested without a database
// (test/devices/pairing-rules.test.ts).
import type { Bound, Executor } from '../db/client.js'
import { appError } from '../errors.js'
import type { Counters } from '../http/counters.js'
import { canManageWithRole } from './access.js'
import { normalisePinCode } from './codes.js'
import type { CodeInput } from './inputs.js'
import {
  countFailedAttempt,
  type DeviceInitRow,
  findDeviceInit,
  findDeviceInitByCode,
  findMemberRole,
  transitionDeviceInit,
} from './repository.js'

/** Failed code submissions allowed per user (and per record) in the window below. */
const MAX_FAILED_ATTEMPTS = 5
export const ATTEMPT_WINDOW_SECONDS = 15 * 60

/** What the pairing rules read and write. */
export type PairingRepository = {
  findDeviceInit: Bound<typeof findDeviceInit>
  findDeviceInitByCode: Bound<typeof findDeviceInitByCode>
  transitionDeviceInit: Bound<typeof transitionDeviceInit>
  countFailedAttempt: Bound<typeof countFailedAttempt>
  findMemberRole: Bound<typeof findMemberRole>
}

/** The drizzle repository, bound to a database. */
export function pairingRepository(db: Executor): PairingRepository {
  return {
    findDeviceInit: (...a) => findDeviceInit(db, ...a),
    findDeviceInitByCode: (...a) => findDeviceInitByCode(db, ...a),
    transitionDeviceInit: (...a) => transitionDeviceInit(db, ...a),
    countFailedAttempt: (...a) => countFailedAttempt(db, ...a),
    findMemberRole: (...a) => findMemberRole(db, ...a),
  }
}

const wrongCode = () => appError('INVALID_CODE')

/**
 * Why a claim that lost a race for its record (another request decided it between our read and
 * our write) is refused: expired when it expired meanwhile, else already used.
 */
export function lostClaimError(latest: Pick<DeviceInitRow, 'status' | 'expiresAt'> | undefined, nowMs: number) {
  if (latest?.status === 'expired' || (latest && latest.expiresAt.getTime() <= nowMs)) return appError('CODE_EXPIRED')
  return appError('CODE_ALREADY_USED')
}

export function createPairingRules({ repo, counters, now }: { repo: PairingRepository; counters: Counters; now: () => number }) {
  /** Pending records past their expiry are expired on read as well as by the sweeper. */
  async function expireIfDue(rec: DeviceInitRow): Promise<DeviceInitRow> {
    if (rec.status !== 'pending' || rec.expiresAt.getTime() > now()) return rec
    return (await repo.transitionDeviceInit(rec.id, ['pending'], 'expired')) ?? (await repo.findDeviceInit(rec.id)) ?? rec
  }

  const tooMany = async (key: string, message: string) =>
    appError('TOO_MANY_ATTEMPTS', message, { 'retry-after': String((await counters.secondsLeft(key)) || ATTEMPT_WINDOW_SECONDS) })

  /** Counts a failed attempt against the record it named, so many accounts cannot share one guessing budget. */
  const failOnRecord = (rec: DeviceInitRow) =>
    Promise.all([counters.hit(`pair-fail-record:${rec.id}`, ATTEMPT_WINDOW_SECONDS), repo.countFailedAttempt(rec.id)])

  /** Finds the record a person's code names, counting failures per user; refuses the reasons a code cannot be used. */
  async function resolveCode(userId: string, code: CodeInput): Promise<DeviceInitRow> {
    if (!code.pinCode && !code.userCode) throw appError('VALIDATION_ERROR', 'body must have pinCode or userCode')
    const userKey = `pair-fail:${userId}`
    if ((await counters.get(userKey)) >= MAX_FAILED_ATTEMPTS) throw await tooMany(userKey, 'Too many wrong codes, try again later')
    const pinCode = code.pinCode !== undefined ? normalisePinCode(code.pinCode) : undefined
    const found = pinCode === null ? undefined : await repo.findDeviceInitByCode(code.userCode ? { userCode: code.userCode } : { pinCode })
    if (!found) {
      await counters.hit(userKey, ATTEMPT_WINDOW_SECONDS)
      throw wrongCode()
    }
    const recordKey = `pair-fail-record:${found.id}`
    if ((await counters.get(recordKey)) >= MAX_FAILED_ATTEMPTS)
      throw await tooMany(recordKey, 'This code is locked after too many failed attempts, try again later')
    // Both codes given: they must name the same device, or neither counts as right.
    if (code.userCode && pinCode !== undefined && pinCode !== found.pinCode) {
      await Promise.all([counters.hit(userKey, ATTEMPT_WINDOW_SECONDS), failOnRecord(found)])
      throw wrongCode()
    }
    const rec = await expireIfDue(found)
    if (rec.status === 'expired') throw appError('CODE_EXPIRED')
    if (rec.status !== 'pending') throw appError('CODE_ALREADY_USED')
    return rec
  }

  /**
   * The record a claim takes: its code resolved, and for an organization the claimer's right to
   * add devices to it (a refusal counts against the record, as a wrong code does).
   */
  async function admitClaim(userId: string, input: CodeInput & { organizationId?: string }): Promise<DeviceInitRow> {
    const found = await resolveCode(userId, input)
    if (input.organizationId) {
      const role = await repo.findMemberRole(input.organizationId, userId)
      if (!canManageWithRole(role)) {
        await failOnRecord(found)
        throw appError('FORBIDDEN', 'You may not add devices to this organization')
      }
    }
    return found
  }

  return { expireIfDue, resolveCode, admitClaim }
}
