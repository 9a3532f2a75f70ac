// Who is offered which release, when a rollout halts, and how a change to a rollout lifts a halt:
// decided from rows already loaded, so each rule is tested without a database
// (test/firmware/halt-rules.test.ts). The service (service.ts) loads, calls these, and writes.
import { createHash } from 'node:crypto'
import semver from 'semver'
import type { OfferContext, ReleaseRow, RolloutRow } from './repository.js'

/** Halt when more than this share of ended attempts failed, once this many ended (rollout defaults). */
const DEFAULT_MAX_FAILURE_SHARE = 0.2
const DEFAULT_MIN_ATTEMPTS = 5

/** 0–99 from the device id alone: the same device is in the same place of every rollout. */
export function bucketOf(deviceId: string): number {
  return createHash('sha256').update(deviceId).digest().readUInt32BE(0) % 100
}

/**
 * Whether a device may be offered (and fetch) a release: an admin chose it, by enrolling it in the
 * fleet of the release's model or by pinning it to that very release. The model a device declares
 * at pairing is its own word, so it is never enough on its own.
 */
export function eligible(
  row: { fleetModel: string | null; pinnedReleaseId: string | null },
  release: Pick<ReleaseRow, 'id' | 'model'>,
): boolean {
  return row.pinnedReleaseId === release.id || row.fleetModel === release.model
}

/**
 * The release a device should be offered now, or null: its pin, else its rollout's target when
 * the rollout is running (not paused, not halted) and the device is in its share. Never an older
 * version than the device runs (only a pin may go down), never one it already runs, and never
 * again one it was offered (a failure is not retried by itself: the admin pins or ships a new
 * version).
 */
export function offerFor<R extends Pick<ReleaseRow, 'id' | 'model' | 'version'>>(
  ctx: Pick<OfferContext, 'deviceId' | 'firmware' | 'fleetModel' | 'releaseId' | 'state' | 'percent' | 'paused' | 'haltedAt'>,
  pinned: R | undefined,
  target: R | undefined,
  retry = false,
): R | null {
  const running = ctx.firmware ?? null
  let choice: R | undefined
  if (pinned) choice = pinned
  // A rollout reaches only devices an admin enrolled in its model's fleet (see eligible()).
  else if (target && ctx.fleetModel === target.model && !ctx.paused && !ctx.haltedAt && bucketOf(ctx.deviceId) < (ctx.percent ?? 0)) {
    const current = semver.valid(running ?? '')
    if (current && semver.gt(target.version, current)) choice = target
  }
  if (!choice || choice.version === running) return null
  // An admin pinning a device to the release it failed is the way to retry it.
  if (ctx.releaseId === choice.id && ctx.state !== 'withdrawn' && !(retry && ctx.state === 'failed')) return null
  return choice
}

/**
 * Whether a report of an ended attempt halts the rollout of `releaseId`: only a running rollout
 * of that release (not one already halted, not one since pointed elsewhere), once `minAttempts`
 * attempts ended since it started counting and more than `maxFailureShare` of them failed.
 */
export function haltDue(
  rollout: Pick<RolloutRow, 'releaseId' | 'haltedAt' | 'minAttempts' | 'maxFailureShare'> | undefined,
  releaseId: string,
  counts: { failed: number; succeeded: number },
): boolean {
  if (!rollout || rollout.releaseId !== releaseId || rollout.haltedAt) return false
  const ended = counts.failed + counts.succeeded
  return ended >= rollout.minAttempts && counts.failed / ended > rollout.maxFailureShare
}

/** Whether a rollout must first be looked at (counted) for a halt: see haltDue. */
export const mayHalt = (rollout: Pick<RolloutRow, 'releaseId' | 'haltedAt'> | undefined, releaseId: string) =>
  Boolean(rollout && rollout.releaseId === releaseId && !rollout.haltedAt)

/**
 * A rollout as an admin's change leaves it: a new target or a resume (paused before and not now,
 * or `paused: false` said outright) lifts a halt and starts counting afresh from `at`; any other
 * change keeps the halt and the count. Thresholds not given keep theirs (or the defaults).
 */
export function rolloutChange(
  before: Pick<RolloutRow, 'releaseId' | 'paused' | 'haltedAt' | 'countingSince' | 'maxFailureShare' | 'minAttempts'> | undefined,
  input: { paused?: boolean; maxFailureShare?: number; minAttempts?: number },
  targetId: string,
  at: Date,
): Pick<RolloutRow, 'paused' | 'haltedAt' | 'countingSince' | 'maxFailureShare' | 'minAttempts'> {
  const paused = input.paused ?? before?.paused ?? false
  const resumed = !before || before.releaseId !== targetId || (before.paused && !paused) || input.paused === false
  return {
    paused,
    haltedAt: resumed ? null : (before?.haltedAt ?? null),
    countingSince: resumed ? at : (before?.countingSince ?? at),
    maxFailureShare: input.maxFailureShare ?? before?.maxFailureShare ?? DEFAULT_MAX_FAILURE_SHARE,
    minAttempts: input.minAttempts ?? before?.minAttempts ?? DEFAULT_MIN_ATTEMPTS,
  }
}
