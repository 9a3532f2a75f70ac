// Firmware updates over the air. An admin uploads a release (stored in the object store, its
// SHA-256, size and Ed25519 signature computed here) and points a rollout (model + channel) at
// it with a percentage; a device is in when a bucket of its id (0–99) is below it, so raising the
// percentage only adds devices. A device older than its target (or pinned to another version,
// downgrades included) gets a retained offer on devices/{id}/ota through the durable downlink,
// reports progress on up/ota, and counts as succeeded when its next status reports the version.
// Too large a share of failed attempts halts the rollout and withdraws offers not yet taken up.
import { createHash, type KeyObject, randomUUID } from 'node:crypto'
import semver from 'semver'
import { ConfigError } from '../config.js'
import type { Database, Executor } from '../db/client.js'
import { insertSettingOnce } from '../settings/repository.js'
import type { DurableLink, StagedMessage } from '../devices/sessions.js'
import { appError } from '../errors.js'
import { insertEvent, insertEvents, type NewEvent } from '../events/repository.js'
import type { OtaOffer, OtaReport } from '../mqtt/contract.js'
import type { ObjectStore } from '../storage/store.js'
import {
  deleteUnusedRelease,
  findDeviceFirmware,
  findRelease,
  findReleaseByVersion,
  findReleases,
  findRollout,
  haltCounts,
  haltRollout,
  insertRelease,
  listReleases,
  listRollouts,
  lockRollout,
  type OfferContext,
  offerContext,
  recordOffers,
  releaseCounts,
  releaseDevices,
  type ReleaseRow,
  rolloutCandidates,
  type RolloutRow,
  setDeviceChoice,
  setOfferState,
  unqueuedOffers,
  untakenOffers,
  upsertRollout,
  withdrawOffers,
} from './repository.js'
import { bucketOf, eligible, haltDue, mayHalt, offerFor, rolloutChange } from './rollout-rules.js'
import { manifestOf, signManifest } from './signing.js'
import type { FirmwareChannel } from './tables.js'

export type FirmwareSettings = { signingKey: KeyObject; publicKey: string; maxBytes: number; urlSeconds: number }

type Notify = (userId: string, kind: 'firmware-failed', message: { title: string; body: string; url?: string }) => Promise<unknown>

export function createFirmwareService(deps: {
  db: Database
  storage: ObjectStore
  link: DurableLink
  settings: FirmwareSettings
  clock: () => Date
  notify?: Notify
  log: { warn: (o: object, m?: string) => void }
}) {
  const { db, storage, link, settings } = deps

  async function offerMessage(release: ReleaseRow): Promise<OtaOffer> {
    const expiresAt = new Date(Date.now() + settings.urlSeconds * 1000)
    return {
      releaseId: release.id,
      model: release.model,
      version: release.version,
      url: await storage.presign(release.objectKey, { method: 'GET', expiresIn: settings.urlSeconds }),
      urlExpiresAt: expiresAt.toISOString(),
      sha256: release.sha256,
      size: release.size,
      signature: release.signature,
    }
  }

  /**
   * Records offers of one release and queues their messages in the outbox, in one transaction: an
   * offer is recorded exactly when its message is queued, whatever crash comes between (a crash
   * that recorded offers without their messages left devices "offered" that never got it, and
   * skipped by every later evaluation). Sent once committed.
   */
  async function offer(release: ReleaseRow, devices: Array<Pick<OfferContext, 'deviceId' | 'userId' | 'organizationId'>>) {
    if (!devices.length) return 0
    const at = deps.clock()
    const message = await offerMessage(release)
    const staged = await db.transaction(async (tx) => {
      await recordOffers(
        tx,
        devices.map((d) => d.deviceId),
        release.id,
        at,
      )
      await insertEvents(
        tx,
        devices.map((d) => ({
          type: 'firmware.offered',
          deviceId: d.deviceId,
          userId: d.userId,
          organizationId: d.organizationId,
          data: { releaseId: release.id, version: release.version },
          at,
        })),
      )
      return stageOffers(
        tx,
        message,
        devices.map((d) => d.deviceId),
      )
    })
    await staged.send()
    return devices.length
  }

  /** Queues `message` as the retained offer of each device, in the caller's transaction. */
  function stageOffers(tx: Executor, message: OtaOffer, deviceIds: string[]): Promise<StagedMessage> {
    return link.stageAll(
      tx,
      deviceIds.map((deviceId) => ({ deviceId, kind: 'ota' as const, payload: message, retain: true })),
    )
  }

  /** The retained offer topic says nothing is offered (an attempt ended, or the offer was taken back), queued in `tx`. */
  function stageClears(tx: Executor, deviceIds: string[]): Promise<StagedMessage> {
    return stageOffers(tx, { version: null }, deviceIds)
  }

  /** Takes back untaken offers of a release from these devices: the retained offer becomes `{version: null}`. */
  async function withdraw(releaseId: string, deviceIds: string[]): Promise<number> {
    const { taken, staged } = await db.transaction(async (tx) => {
      const taken = await withdrawOffers(tx, releaseId, deviceIds, deps.clock())
      return { taken, staged: await stageClears(tx, taken) }
    })
    await staged.send()
    return taken.length
  }

  /** Works out one device's offer from what is stored now (or `ctx`, just read), and sends it when there is one. */
  async function evaluate(deviceId: string, read?: OfferContext, retry = false): Promise<void> {
    const ctx = read ?? (await offerContext(db, deviceId))
    if (!ctx || (!ctx.pinnedReleaseId && !ctx.rolloutReleaseId)) return
    const ids = [ctx.pinnedReleaseId, ctx.rolloutReleaseId].filter((x): x is string => Boolean(x))
    const releases = new Map((await findReleases(db, ids)).map((r) => [r.id, r]))
    const pinned = ctx.pinnedReleaseId ? releases.get(ctx.pinnedReleaseId) : undefined
    const target = ctx.rolloutReleaseId ? releases.get(ctx.rolloutReleaseId) : undefined
    // A release of another model is never offered (a pin is checked when it is set; this is the guard).
    const choice = offerFor(ctx, pinned, target, retry)
    if (choice && choice.model === ctx.model) await offer(choice, [ctx])
  }

  /** Offers a rollout's target to every device of its model and channel that should have it now. */
  async function evaluateRollout(rollout: RolloutRow): Promise<number> {
    const target = await findRelease(db, rollout.releaseId)
    if (!target) return 0
    const due = (await rolloutCandidates(db, rollout.model, rollout.channel)).filter((c) => offerFor(c, undefined, target))
    return offer(target, due)
  }

  async function publishRelease(
    actorId: string,
    input: { model: string; version: string; channel: FirmwareChannel; notes: string; bytes: Buffer },
  ) {
    const version = semver.valid(input.version)
    // Build metadata (+…) is refused: semver ignores it when comparing, so 1.2.0+a and 1.2.0+b would be one version.
    if (!version || version !== input.version || version.length > 50)
      throw appError(
        'VALIDATION_ERROR',
        'version must be a semantic version such as 1.4.0 or 2.0.0-beta.1 (at most 50 characters, no build metadata)',
      )
    if (input.bytes.length === 0) throw appError('VALIDATION_ERROR', 'The firmware image is empty')
    if (await findReleaseByVersion(db, input.model, version)) throw appError('FIRMWARE_VERSION_EXISTS')
    const id = randomUUID()
    const sha256 = createHash('sha256').update(input.bytes).digest('hex')
    const size = input.bytes.length
    const signature = signManifest(settings.signingKey, manifestOf({ model: input.model, version, sha256, size }))
    const objectKey = `firmware/${id}.bin`
    await storage.put(objectKey, input.bytes, { contentType: 'application/octet-stream' })
    const row = await insertRelease(db, {
      id,
      model: input.model,
      version,
      channel: input.channel,
      notes: input.notes,
      objectKey,
      sha256,
      size,
      signature,
      createdBy: actorId,
    }).catch(async (err) => {
      await storage.delete(objectKey).catch(() => {})
      throw err
    })
    if (!row) {
      // Another upload of the same version won the race: nothing of this one is kept.
      await storage.delete(objectKey).catch(() => {})
      throw appError('FIRMWARE_VERSION_EXISTS')
    }
    await insertEvent(db, {
      type: 'firmware.released',
      userId: actorId,
      data: { releaseId: id, model: input.model, version, channel: input.channel },
    })
    return withCounts([row]).then((r) => r[0]!)
  }

  async function withCounts(rows: ReleaseRow[]) {
    const counts = await releaseCounts(
      db,
      rows.map((r) => r.id),
    )
    return rows.map((r) => ({ ...r, counts: counts.get(r.id)! }))
  }

  async function requireRelease(id: string) {
    const row = await findRelease(db, id)
    if (!row) throw appError('FIRMWARE_NOT_FOUND')
    return row
  }

  async function release(id: string) {
    const [row] = await withCounts([await requireRelease(id)])
    return { ...row!, devices: await releaseDevices(db, id, 500) }
  }

  async function removeRelease(actorId: string, id: string) {
    const outcome = await deleteUnusedRelease(db, id)
    if (outcome === 'in-use') throw appError('FIRMWARE_IN_USE')
    if (!outcome) throw appError('FIRMWARE_NOT_FOUND')
    await storage.delete(outcome.objectKey).catch((err) => deps.log.warn({ err, key: outcome.objectKey }, 'firmware image not deleted'))
    await insertEvent(db, {
      type: 'firmware.deleted',
      userId: actorId,
      data: { releaseId: id, model: outcome.model, version: outcome.version },
    })
  }

  async function rolloutRecord(r: RolloutRow) {
    const target = await findRelease(db, r.releaseId)
    const counts = (await releaseCounts(db, [r.releaseId])).get(r.releaseId)!
    return { ...r, version: target?.version ?? null, counts }
  }

  async function setRollout(
    actorId: string,
    model: string,
    channel: FirmwareChannel,
    input: { version: string; percent: number; paused?: boolean; maxFailureShare?: number; minAttempts?: number },
  ) {
    const target = await findReleaseByVersion(db, model, input.version)
    if (!target) throw appError('FIRMWARE_NOT_FOUND', `Model ${model} has no release ${input.version}`)
    if (channel === 'stable' && target.channel !== 'stable') throw appError('FIRMWARE_CHANNEL_MISMATCH')
    const before = await findRollout(db, model, channel)
    const at = deps.clock()
    // A new target or a resume starts counting afresh: the halt is lifted.
    const change = rolloutChange(before, input, target.id, at)
    const { paused } = change
    // Offers of the old plan that no device has started on are taken back: another target, a
    // pause, or devices now outside the share.
    if (before && before.releaseId !== target.id) await withdraw(before.releaseId, await untakenOffers(db, before.releaseId, channel))
    else if (paused) await withdraw(target.id, await untakenOffers(db, target.id, channel))
    else if (before && input.percent < before.percent)
      await withdraw(
        target.id,
        (await untakenOffers(db, target.id, channel)).filter((id) => bucketOf(id) >= input.percent),
      )
    const rollout = await upsertRollout(db, {
      model,
      channel,
      releaseId: target.id,
      percent: input.percent,
      ...change,
      updatedAt: at,
      updatedBy: actorId,
    })
    await insertEvent(db, {
      type: 'firmware.rollout',
      userId: actorId,
      data: {
        model,
        channel,
        version: target.version,
        percent: rollout.percent,
        paused: rollout.paused,
        halted: Boolean(rollout.haltedAt),
      },
    })
    const offered = await evaluateRollout(rollout)
    return { ...(await rolloutRecord(rollout)), offeredNow: offered }
  }

  async function rollouts() {
    return Promise.all((await listRollouts(db)).map(rolloutRecord))
  }

  /**
   * An admin's choice for one device: its channel, a pin to an exact version (null lifts it), and
   * whether it is in the fleet of the model it reports (what a rollout reaches and counts).
   */
  async function setDevice(
    actorId: string,
    deviceId: string,
    input: { channel?: FirmwareChannel; pinnedVersion?: string | null; fleet?: boolean },
  ) {
    const ctx = await offerContext(db, deviceId)
    if (!ctx) throw appError('DEVICE_NOT_FOUND')
    let fleetModel: string | null | undefined
    if (input.fleet === false) fleetModel = null
    else if (input.fleet) {
      if (!ctx.model) throw appError('VALIDATION_ERROR', 'The device never said its model, so it cannot join a fleet')
      fleetModel = ctx.model
    }
    let pinnedReleaseId: string | null | undefined
    if (input.pinnedVersion === null) pinnedReleaseId = null
    else if (input.pinnedVersion !== undefined) {
      if (!ctx.model) throw appError('VALIDATION_ERROR', 'The device never said its model, so no release can be pinned')
      const r = await findReleaseByVersion(db, ctx.model, input.pinnedVersion)
      if (!r) throw appError('FIRMWARE_NOT_FOUND', `Model ${ctx.model} has no release ${input.pinnedVersion}`)
      pinnedReleaseId = r.id
    }
    const row = await setDeviceChoice(db, deviceId, { channel: input.channel, pinnedReleaseId, fleetModel })
    await insertEvent(db, {
      type: 'firmware.device_choice',
      deviceId,
      userId: actorId,
      organizationId: ctx.organizationId,
      data: { channel: input.channel, pinnedVersion: input.pinnedVersion, fleet: input.fleet },
    })
    // No longer chosen for the release it was offered (out of the fleet, in another model's, or
    // its pin lifted or moved): an offer it has not started on is taken back.
    if (row.releaseId && row.state === 'offered') {
      const offered = await findRelease(db, row.releaseId)
      if (offered && !eligible(row, offered)) await withdraw(row.releaseId, [deviceId])
    }
    await evaluate(deviceId, undefined, Boolean(input.pinnedVersion))
    return deviceState(deviceId)
  }

  /** What a device runs, its channel and pin, and the offer it has (for its owner and admins). */
  async function deviceState(deviceId: string) {
    const ctx = await offerContext(db, deviceId)
    if (!ctx) throw appError('DEVICE_NOT_FOUND')
    const ids = [ctx.pinnedReleaseId, ctx.releaseId].filter((x): x is string => Boolean(x))
    const releases = new Map((await findReleases(db, ids)).map((r) => [r.id, r]))
    const offered = ctx.releaseId ? releases.get(ctx.releaseId) : undefined
    const row = await findDeviceFirmware(db, deviceId)
    return {
      deviceId,
      model: ctx.model,
      running: ctx.firmware,
      channel: ctx.channel,
      pinnedVersion: ctx.pinnedReleaseId ? (releases.get(ctx.pinnedReleaseId)?.version ?? null) : null,
      fleet: Boolean(ctx.fleetModel && ctx.fleetModel === ctx.model),
      offer: offered
        ? {
            releaseId: offered.id,
            version: offered.version,
            state: ctx.state,
            reason: row?.reason ?? null,
            offeredAt: row?.offeredAt?.toISOString() ?? null,
            updatedAt: row?.updatedAt?.toISOString() ?? null,
          }
        : null,
    }
  }

  /** The device's current offer with a fresh download link (the retained one may have expired). */
  async function currentOffer(deviceId: string): Promise<OtaOffer> {
    const row = await findDeviceFirmware(db, deviceId)
    const pending = row?.releaseId && row.state && !['succeeded', 'failed', 'withdrawn'].includes(row.state)
    const release = pending ? await findRelease(db, row.releaseId!) : undefined
    // No link for a device nobody chose for this release (taken out of the fleet since, say).
    if (!row || !release || !eligible(row, release)) throw appError('NO_FIRMWARE_OFFER')
    return offerMessage(release)
  }

  /**
   * up/status: the version it reports ends an offer of that version as succeeded; then it may get
   * its next one. One query for a device with no offer, pin or rollout (every status report pays it).
   */
  async function onStatus(deviceId: string, firmware: string | undefined): Promise<void> {
    const ctx = await offerContext(db, deviceId)
    if (!ctx) return
    const open = ctx.releaseId && ctx.state && !['succeeded', 'failed', 'withdrawn'].includes(ctx.state)
    if (firmware && open) {
      const release = await findRelease(db, ctx.releaseId!)
      // The success, its Event and the cleared offer together.
      const staged =
        release?.version === firmware
          ? await db.transaction(async (tx) => {
              if (!(await setOfferState(tx, deviceId, release.id, 'succeeded', null, deps.clock()))) return null
              await event(tx, deviceId, 'firmware.succeeded', { releaseId: release.id, version: release.version })
              return stageClears(tx, [deviceId])
            })
          : null
      if (staged) {
        ctx.state = 'succeeded'
        await staged.send()
      }
    }
    // The report has just been applied: the context read above already holds this firmware.
    await evaluate(deviceId, ctx)
  }

  async function event(tx: Executor, deviceId: string, type: string, data: Record<string, unknown>) {
    const ctx = await offerContext(tx, deviceId)
    const e: NewEvent = { type, deviceId, userId: ctx?.userId, organizationId: ctx?.organizationId, data }
    await insertEvent(tx, e)
    return ctx
  }

  /** up/ota: progress with the offered version. Success counts only from up/status; a failure ends the attempt. */
  async function onProgress(deviceId: string, report: OtaReport): Promise<boolean> {
    const row = await findDeviceFirmware(db, deviceId)
    const release = row?.releaseId ? await findRelease(db, row.releaseId) : undefined
    if (!release || release.version !== report.version) return false
    const at = deps.clock()
    const data = { releaseId: release.id, version: release.version, state: report.state, reason: report.reason ?? null }
    if (report.state === 'succeeded') {
      await event(db, deviceId, 'firmware.progress', data)
      return true
    }
    // The report, its Events, the cleared offer and the halt it may cause: one transaction, so a
    // crash cannot keep the failure and lose the halt (the start-up pass checks again as well).
    const outcome = await db.transaction(async (tx) => {
      // The rollout first, then the device rows: the lock order of every halt (haltIfDue), so
      // concurrent reports wait for each other instead of deadlocking.
      if (report.state === 'failed' && !row!.pinnedReleaseId) await lockRollout(tx, release.model, row!.channel)
      const moved = await setOfferState(tx, deviceId, release.id, report.state, report.reason ?? null, at)
      if (!moved) return null
      const ctx = await event(tx, deviceId, report.state === 'failed' ? 'firmware.failed' : 'firmware.progress', data)
      if (report.state !== 'failed' || !ctx) return null
      const halt = moved.pinnedReleaseId ? null : await haltIfDue(tx, release, moved.channel)
      // The attempt ended: a device without memory must not find the offer again at its next
      // connect; queued with the halt's withdrawals in one statement (the outbox's rows in id order).
      const cleared = await stageClears(tx, [deviceId, ...(halt?.withdrawn ?? [])])
      // The owner's alert, like battery-low and silence: an Event and a push notification.
      await insertEvent(tx, {
        type: 'device.alert',
        deviceId,
        userId: ctx.userId,
        organizationId: ctx.organizationId,
        data: { kind: 'firmware-failed', version: release.version, reason: report.reason ?? null },
      })
      return { ctx, cleared, halt }
    })
    if (!outcome) return true
    const { ctx, cleared, halt } = outcome
    if (halt) logHalt(halt)
    await cleared.send()
    // Not awaited: a slow push service must not hold up the device's other uplink.
    void deps
      .notify?.(ctx.userId, 'firmware-failed', {
        title: 'Firmware update failed',
        body: `The update to ${release.version} failed${report.reason ? `: ${report.reason}` : ''}.`,
        url: `/devices/${deviceId}`,
      })
      ?.catch((err) => deps.log.warn({ err, deviceId }, 'could not notify a failed firmware update'))
    return true
  }

  type Halt = { release: ReleaseRow; channel: FirmwareChannel; counts: { failed: number; succeeded: number }; withdrawn: string[] }

  /**
   * In `tx`: halts the rollout of `release` when too many of its ended attempts failed, and takes
   * back offers not yet taken up; the caller queues their cleared offers in the same transaction
   * (nobody sees a halted rollout whose offers still stand). The rollout row is locked first, so
   * concurrent reports take turns and each counts the others'. Null when it does not halt.
   */
  async function haltIfDue(tx: Executor, release: ReleaseRow, channel: FirmwareChannel): Promise<Halt | null> {
    const rollout = await lockRollout(tx, release.model, channel)
    if (!rollout || !mayHalt(rollout, release.id)) return null
    const counts = await haltCounts(tx, release, channel, rollout.countingSince)
    if (!haltDue(rollout, release.id, counts)) return null
    const at = deps.clock()
    if (!(await haltRollout(tx, release.model, channel, release.id, at))) return null
    await insertEvent(tx, {
      type: 'firmware.rollout_halted',
      data: { model: release.model, channel, version: release.version, ...counts },
    })
    const withdrawn = await withdrawOffers(tx, release.id, await untakenOffers(tx, release.id, channel), at)
    return { release, channel, counts, withdrawn }
  }

  function logHalt(h: Halt) {
    deps.log.warn(
      { model: h.release.model, channel: h.channel, version: h.release.version, ...h.counts },
      'firmware rollout halted: too many failed updates',
    )
  }

  /**
   * At start: what a crash may have left half done. Rollouts whose recorded failures cross their
   * threshold are halted (a report recorded by an earlier version that died before halting), and
   * offers not taken up whose message the outbox no longer holds are queued again.
   */
  async function recover(): Promise<{ halted: number; requeued: number }> {
    let haltedNow = 0
    for (const r of await listRollouts(db)) {
      if (r.haltedAt) continue
      const release = await findRelease(db, r.releaseId)
      if (!release) continue
      const halt = await db.transaction(async (tx) => {
        const h = await haltIfDue(tx, release, r.channel)
        return h && { h, cleared: await stageClears(tx, h.withdrawn) }
      })
      if (halt) {
        haltedNow += 1
        logHalt(halt.h)
        await halt.cleared.send()
      }
    }
    const byRelease = new Map<string, string[]>()
    for (const o of await unqueuedOffers(db)) {
      const ids = byRelease.get(o.releaseId)
      if (ids) ids.push(o.deviceId)
      else byRelease.set(o.releaseId, [o.deviceId])
    }
    let requeued = 0
    for (const [releaseId, deviceIds] of byRelease) {
      const release = await findRelease(db, releaseId)
      if (!release) continue
      const message = await offerMessage(release)
      const staged = await db.transaction((tx) => stageOffers(tx, message, deviceIds))
      await staged.send()
      requeued += deviceIds.length
    }
    return { halted: haltedNow, requeued }
  }

  return {
    publicKey: settings.publicKey,
    publishRelease,
    releases: async (model?: string) => withCounts(await listReleases(db, model)),
    release,
    removeRelease,
    setRollout,
    rollouts,
    setDevice,
    deviceState,
    currentOffer,
    onStatus,
    onProgress,
    recover,
  }
}

export type FirmwareService = ReturnType<typeof createFirmwareService>

/**
 * Devices trust the signing key they were given for good: a service that comes back with another
 * one (a lost DATA_DIR, a typo in FIRMWARE_SIGNING_KEY) would offer firmware every device refuses.
 * The first key is recorded in the database; starting with another is refused.
 */
export async function checkSigningKey(db: Database, publicKey: string): Promise<void> {
  const trusted = await insertSettingOnce(db, 'firmware.public_key', publicKey)
  if (trusted !== publicKey)
    throw new ConfigError(
      `Invalid configuration:\n  FIRMWARE_SIGNING_KEY: devices of this database trust another firmware key (public ${trusted}); restore DATA_DIR/firmware-signing-key from a backup or set FIRMWARE_SIGNING_KEY to that key`,
    )
}
