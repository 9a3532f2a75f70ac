// The pairing flow (RFC 8628 shaped) and the device lifecycle. Routes call these; these call
// the repositories. Every state change is a compare-and-set, so concurrent requests race safely.
import type { Config } from '../config.js'
import type { Database, Executor } from '../db/client.js'
import { appError } from '../errors.js'
import { deleteDeviceEvents, insertEvent } from '../events/repository.js'
import { findUserByEmail } from '../auth/users-repository.js'
import type { Counters } from '../http/counters.js'
import { accessibleDevice } from './access.js'
import { matchesHash, newDeviceCode, newDeviceId, newDeviceSecret, newPinCode, newUserCode, sha256 } from './codes.js'
import { createPairingRules, lostClaimError, pairingRepository } from './pairing-rules.js'
import { issueCredentials } from './credentials.js'
import { toInitRecord } from './records.js'
import { displayTooLarge } from '../images/profiles.js'
import {
  deleteDeviceRows,
  expireStaleDeviceInits,
  findDevice,
  findDeviceInit,
  insertCommand,
  insertDevice,
  setDesiredState,
  insertDeviceInit,
  recordPoll,
  setDeviceSecret,
  transitionDeviceInit,
  updateDevice,
  type DeviceInitRow,
  type DevicePatch,
  type DeviceRow,
} from './repository.js'
import { randomUUID } from 'node:crypto'
import type { ClaimInput, CodeInput, InitInput, PatchInput } from './inputs.js'
import type { DurableLink } from './sessions.js'
import { type CommandMessage, type ConfigMessage, deviceTopics, type ScheduleInfo } from '../mqtt/contract.js'
import { findSchedule } from '../schedules/repository.js'
import { scheduleInfo } from '../schedules/wire.js'
import type { DeviceCommandName, DeviceInfo } from './tables.js'

export type DeviceServiceDeps = {
  db: Database
  config: Config
  counters: Counters
  link: DurableLink
  /**
   * Who may see a device changed other than through the account layer (which announces its own
   * changes): live watchers (companion apps on MQTT) are checked again, on every instance.
   */
  accessChanged?: () => Promise<void>
}

// The input types come from the request schemas, so they are what the routes validate.
export type { ClaimInput, CodeInput, InitInput } from './inputs.js'

/**
 * A check a transport makes before a claim goes through (it throws to refuse): TRMNL asks before a
 * re-set-up frame takes the place of a device the claimer already has.
 */
export type ClaimCheck = (userId: string, rec: DeviceInitRow, input: ClaimInput) => Promise<void>

export function createDeviceService({ db, config, counters, link, accessChanged }: DeviceServiceDeps) {
  const claimChecks: ClaimCheck[] = []
  const verificationUri = `${config.baseUrl}/device`

  async function init(input: InitInput) {
    // Before anything is stored: a display no panel has would make every conversion for it slow.
    const tooLarge = displayTooLarge(input.display)
    if (tooLarge) throw appError('DISPLAY_TOO_LARGE', `The display is larger than any panel this service serves: ${tooLarge}`)
    const id = newDeviceId()
    const deviceCode = newDeviceCode()
    const now = new Date()
    const info: DeviceInfo = { model: input.model, firmware: input.firmware, manufacturer: input.manufacturer, serial: input.serial }
    const row = await insertDeviceInit(
      db,
      {
        id,
        deviceCodeHash: sha256(deviceCode),
        userCode: newUserCode(),
        pinCode: newPinCode(),
        status: 'pending',
        expiresAt: new Date(now.getTime() + config.devices.codeTtl * 1000),
        interval: config.devices.pollInterval,
        // Only what this service knows: a newer firmware may send more (ignored, see the route).
        display: {
          width: input.display.width,
          height: input.display.height,
          palette: input.display.palette,
          fit: input.display.fit ?? 'cover',
          ...(input.display.inline !== undefined ? { inline: input.display.inline } : {}),
          ...(input.display.dither !== undefined ? { dither: input.display.dither } : {}),
        },
        info: JSON.parse(JSON.stringify(info)),
        createdAt: now,
      },
      newPinCode,
    )
    await autoApprove(row.pinCode, input)
    return {
      deviceId: row.id,
      deviceCode,
      userCode: row.userCode,
      pinCode: row.pinCode,
      verification_uri: verificationUri,
      // RFC 8628's user_code is the code the person sees: the link carries the pin the display
      // shows, so the pairing page can show it for them to compare (the UUID stays for apps).
      verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(row.pinCode)}`,
      expires_at: row.expiresAt.toISOString(),
      expires_in: config.devices.codeTtl,
      interval: row.interval,
    }
  }

  /**
   * DEVICE_AUTO_APPROVE_USER_EMAIL (development only, refused in production): the new device is
   * claimed at once for that account, as if its owner had typed the code, so simulated fleets
   * pair without anyone. Until the account exists the device waits to be claimed as usual.
   */
  async function autoApprove(pinCode: string, input: InitInput) {
    const email = config.devices.autoApproveUserEmail
    if (!email) return
    const owner = await findUserByEmail(db, email)
    if (!owner) return
    await claim(owner.id, { pinCode, name: `${input.model ?? 'Display'} ${pinCode}`.slice(0, 64) })
  }

  // The wall clock: code expiry is real time, whatever clock the app's schedules run on.
  const rules = createPairingRules({ repo: pairingRepository(db), counters, now: Date.now })
  const { expireIfDue, resolveCode } = rules

  /**
   * One code submission per user at a time (in this process): the failure count is read before
   * the lookup and written after it, so parallel guesses must not overtake each other. An honest
   * app pairing many devices at once just waits a few milliseconds per claim.
   */
  const perUser = new Map<string, Promise<unknown>>()
  function oneAtATime<T>(userId: string, task: () => Promise<T>): Promise<T> {
    const previous = perUser.get(userId) ?? Promise.resolve()
    const next = previous.then(task, task)
    const settled = next.catch(() => {})
    perUser.set(userId, settled)
    void settled.then(() => {
      if (perUser.get(userId) === settled) perUser.delete(userId)
    })
    return next
  }

  async function claim(userId: string, input: ClaimInput) {
    const rec = await oneAtATime(userId, async () => {
      const found = await rules.admitClaim(userId, input)
      for (const check of claimChecks) await check(userId, found, input)
      return found
    })
    const result = await db.transaction(async (tx) => {
      const now = new Date()
      const approved = await transitionDeviceInit(
        tx,
        rec.id,
        ['pending'],
        'approved',
        { userId, organizationId: input.organizationId ?? null, decidedAt: now },
        { unexpiredAt: now },
      )
      if (!approved) return null
      const dev = await insertDevice(tx, {
        id: rec.id,
        name: input.name,
        userId,
        organizationId: input.organizationId ?? null,
        pinCode: rec.pinCode,
        icon: input.icon ?? 'frame',
        color: (input.color ?? '#000000').toLowerCase(),
        description: input.description ?? '',
        selectedModel: input.selectedModel ?? 'local',
        display: rec.display,
        info: rec.info,
        // The device exists from the moment it started pairing, as its initialisation record says.
        createdAt: rec.createdAt,
      })
      const ev = await insertEvent(tx, {
        type: 'device.paired',
        deviceId: dev.id,
        userId,
        organizationId: dev.organizationId,
        data: { via: input.userCode ? 'userCode' : 'pinCode', name: dev.name },
      })
      await transitionDeviceInit(tx, rec.id, ['approved'], 'approved', { eventId: ev.id })
      return { dev, eventId: ev.id }
    })
    if (!result) {
      // Another request decided this record between our read and our write.
      throw lostClaimError(await findDeviceInit(db, rec.id), Date.now())
    }
    return { device: result.dev, eventId: result.eventId, status: 'approved' as const }
  }

  async function deny(userId: string, code: CodeInput) {
    const rec = await oneAtATime(userId, () => resolveCode(userId, code))
    const denied = await transitionDeviceInit(db, rec.id, ['pending'], 'denied', { userId, decidedAt: new Date() })
    if (!denied) throw appError('CODE_ALREADY_USED')
    await insertEvent(db, { type: 'device.denied', deviceId: rec.id, userId, data: {} })
    return { success: true, status: 'denied' as const, deviceId: rec.id }
  }

  async function poll(deviceId: string, deviceCode: string) {
    const found = await findDeviceInit(db, deviceId)
    if (!found || !matchesHash(deviceCode, found.deviceCodeHash)) throw appError('DEVICE_NOT_FOUND', 'Unknown device or wrong device code')
    if (!(await recordPoll(db, found.id, new Date(), found.interval))) {
      throw appError('SLOW_DOWN', `Poll at most every ${found.interval} seconds`, { 'retry-after': String(Math.max(1, found.interval)) })
    }
    const rec = await expireIfDue(found)
    if (rec.status === 'approved') {
      const secret = newDeviceSecret()
      const issued = await issueCredentials(db, { deviceId: rec.id, secretHash: sha256(secret), transport: 'mqtt', from: ['approved'] })
      if (issued) {
        // Before the device has its credentials: its first connect is then decided by the broker alone.
        await link.credentialsIssued?.(rec.id, secret)
        if (issued.device) await publishConfig(issued.device)
        return {
          ...toInitRecord(issued.init, issued.device, deviceCode),
          credentials: {
            mqttUrl: config.devices.mqttPublicUrl,
            websocketUrl: `${config.baseUrl.replace(/^http/, 'ws')}/mqtt`,
            username: rec.id,
            password: secret,
            clientId: rec.id,
            topics: deviceTopics(rec.id),
            firmwareKey: config.firmware.publicKey,
          },
        }
      }
    }
    const latest = (await findDeviceInit(db, rec.id)) ?? rec
    return toInitRecord(latest, await findDevice(db, rec.id), deviceCode)
  }

  async function disconnect(userId: string, deviceId: string) {
    const dev = await accessibleDevice(db, deviceId, userId, 'manage')
    const revoked = await db.transaction(async (tx) => {
      const updated = await setDeviceSecret(tx, dev.id, null)
      await transitionDeviceInit(tx, dev.id, ['approved', 'active'], 'disconnected')
      await insertEvent(tx, {
        type: 'device.credentials_revoked',
        deviceId: dev.id,
        userId,
        organizationId: dev.organizationId,
        data: { by: userId },
      })
      return updated ?? dev
    })
    await link.credentialsRevoked?.(dev.id)
    const kicked = await link.kick(dev.id, 'kicked')
    return { device: revoked, kicked }
  }

  async function remove(userId: string, deviceId: string) {
    const dev = await accessibleDevice(db, deviceId, userId, 'manage')
    // Revoked and disconnected first, so the session's last presence event is written (and then
    // deleted with the rest) instead of landing after the device is gone.
    await setDeviceSecret(db, dev.id, null)
    await link.credentialsRevoked?.(dev.id)
    await link.kick(dev.id, 'kicked')
    const deleted = await db.transaction(async (tx) => {
      await deleteDeviceEvents(tx, dev.id)
      // The foreign keys do the rest: prompts go with the device, jobs and images (the user's) lose it.
      return deleteDeviceRows(tx, dev.id)
    })
    if (!deleted) throw appError('DEVICE_NOT_FOUND')
    // Apps still subscribed to its state and events lose them now, not at their next reconnect.
    await accessChanged?.()
    return deleted
  }

  /** A change to a device the caller manages (the route's deviceAccess checked it). */
  async function patch(dev: DeviceRow, { display, ...changes }: PatchInput) {
    const update: DevicePatch = { ...changes, ...(changes.color ? { color: changes.color.toLowerCase() } : {}) }
    // The display's size and palette are the panel's; the owner may choose how it is dithered.
    if (display) update.display = { ...dev.display, ...display }
    // The change and the config that announces it are stored together: a crash cannot keep one without the other.
    const { updated, message } = await db.transaction(async (tx) => {
      await updateDevice(tx, dev.id, update)
      // Every change is a new desired config: the device is out of sync until it reports it.
      const updated = await setDesiredState(tx, dev.id, { bumpConfig: true })
      if (!updated) throw appError('DEVICE_NOT_FOUND')
      return { updated, message: await link.stage(tx, dev.id, 'config', await configMessage(tx, updated), { retain: true }) }
    })
    await message.send()
    return updated
  }

  /** The desired config of a device, with its schedule as the scheduler last worked it out (or as given, by the scheduler itself). */
  async function configMessage(ex: Executor, dev: DeviceRow, schedule?: ScheduleInfo | null): Promise<ConfigMessage> {
    return {
      version: dev.desiredConfigVersion,
      name: dev.name,
      selectedModel: dev.selectedModel,
      color: dev.color,
      icon: dev.icon,
      display: dev.display,
      schedule: schedule !== undefined ? schedule : scheduleInfo(await findSchedule(ex, dev.id)),
      firmwareKey: config.firmware.publicKey,
    }
  }

  /** The retained desired config on devices/{id}/config. */
  async function publishConfig(dev: DeviceRow, schedule?: ScheduleInfo | null) {
    await link.publish(dev.id, 'config', await configMessage(db, dev, schedule), { retain: true })
  }

  /** A new desired config (the version goes up: out of sync until the device reports it), published. */
  async function refreshConfig(dev: DeviceRow, schedule?: ScheduleInfo | null) {
    const updated = await setDesiredState(db, dev.id, { bumpConfig: true })
    if (updated) await publishConfig(updated, schedule)
  }

  /** A command from `userId` to a device they manage (the route's deviceAccess checked it). */
  async function sendCommand(userId: string, dev: DeviceRow, command: DeviceCommandName, args: Record<string, unknown>) {
    // The command, its event and its message are stored together; then sent.
    const { row, message } = await db.transaction(async (tx) => {
      const row = await insertCommand(tx, { id: randomUUID(), deviceId: dev.id, userId, command, args })
      await insertEvent(tx, {
        type: 'device.command',
        deviceId: dev.id,
        userId,
        organizationId: dev.organizationId,
        data: { commandId: row.id, command, args },
      })
      // QoS 1 on a persistent session: a sleeping device gets it when it reconnects.
      const payload: CommandMessage = { commandId: row.id, command, args, issuedAt: row.createdAt.toISOString() }
      return { row, message: await link.stage(tx, dev.id, 'cmd', payload) }
    })
    await message.send()
    return row
  }

  const sweep = () => expireStaleDeviceInits(db, new Date())

  const addClaimCheck = (check: ClaimCheck) => {
    claimChecks.push(check)
  }

  return { init, claim, deny, poll, disconnect, remove, patch, sendCommand, publishConfig, refreshConfig, sweep, addClaimCheck }
}

export type DeviceService = ReturnType<typeof createDeviceService>
