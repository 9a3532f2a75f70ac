// Devices running TRMNL's open firmware, which poll over HTTP instead of holding an MQTT session
// (docs/trmnl.md). They pair with the same code flow (the firmware paints the code it gets as
// friendly_id), show what the device's desired image is (sent, generated or scheduled exactly as
// for MQTT frames), report battery and firmware with every poll, take identify and sleep as
// special functions and firmware offers as update_firmware, and are online while they poll on time.
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Database } from '../db/client.js'
import { ackCommand, updateDevice, applyDeviceReport, deleteDeviceRows, findDevice, findDeviceInit } from '../devices/repository.js'
import { mayAccess } from '../devices/access.js'
import { issueCredentials } from '../devices/credentials.js'
import { createDevicePresence } from '../devices/presence.js'
import { appError } from '../errors.js'
import type { DeviceService } from '../devices/service.js'
import type { DeviceLink } from '../devices/sessions.js'
import type { PollCarried } from '../downlink/repository.js'
import { deleteDeviceEvents } from '../events/repository.js'
import type { FirmwareService } from '../firmware/service.js'
import type { DisplayProfile } from '../images/profiles.js'
import type { PresenceChange } from '../mqtt/contract.js'
import { verifyEd25519 } from '../firmware/signing.js'
import { itemImageId } from '../schedules/playlists.js'
import { findSchedule, listItems } from '../schedules/repository.js'
import { scheduleInfo } from '../schedules/wire.js'
import type { ObjectStore } from '../storage/store.js'
import {
  earlierDevicesOf,
  findByApiKeyHash,
  findByDeviceId,
  findVariant,
  findVariantsOf,
  insertTrmnlDevice,
  moveCredentials,
  overdueDevices,
  acceptSignature,
  keepPairingOpen,
  nextCommand,
  pruneAbandoned,
  recordPoll,
  type TrmnlRow,
} from './repository.js'
import {
  batteryPercent,
  type DisplayAnswer,
  type DisplayLinks,
  formatsFor,
  MIN_REFRESH_SECONDS,
  pairedAnswer,
  pairingStage,
  refreshFor,
  resetAnswer,
  type ScreenKind,
  screenName,
  waitingAnswer,
} from './display-rules.js'
import { grayscalePng } from './files.js'
import { panelFor, type Panel } from './panels.js'
import { identifyScreen, pairedScreen, type ScreenFormat, setupScreen } from './screens.js'
import { isWeakEd25519Key } from './weak-keys.js'

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

export const MAC = /^[0-9A-F]{2}(:[0-9A-F]{2}){5}$/i

export type TrmnlHeaders = {
  id?: string
  accessToken?: string
  fwVersion?: string
  model?: string
  width?: number
  height?: number
  refreshRate?: number
  batteryVoltage?: number
  /** Sent by boards that measure it themselves (TRMNL X). */
  percentCharged?: number
  rssi?: number
  /** The firmware's Ed25519 identity: X-Public-Key (hex), X-Signature (hex), X-Timestamp (ms). */
  publicKey?: string
  signature?: string
  timestamp?: number
  /** The `special_function: true` header: the frame's button was double-pressed (its special function runs). */
  specialFunction?: boolean
}

const profileOf = (panel: Panel): DisplayProfile => ({ width: panel.width, height: panel.height, palette: panel.palette, fit: 'cover' })

/** How far a signed request's X-Timestamp may be from the service's time (it came from GET /api/time moments before). */
const SIGNATURE_WINDOW_MS = 5 * 60_000

export function createTrmnlService(deps: {
  db: Database
  devices: DeviceService
  storage: ObjectStore
  baseUrl: string
  secret: string
  /** Seconds between polls the service asks for, and how late a device may be before it counts as offline. */
  refreshSeconds: number
  marginSeconds: number
  /** How long a pending pairing stays open after each poll of its device. */
  pairingSeconds: number
  clock: () => Date
  firmware: () => FirmwareService | undefined
  reported: (deviceId: string, report: { configVersion?: number; shownImageId?: string | null }) => Promise<unknown>
  /** The durable downlink's side of a poll: where it begins, and what its answer carried (delivered by it). */
  polls?: { starts(deviceId: string): Promise<number>; answered(deviceId: string, carried: PollCarried): Promise<unknown> }
  status: (deviceId: string, report: { battery?: number; interval?: number; firmware?: string }) => Promise<unknown>
  onPresence?: (change: PresenceChange) => void
  /** Live state for apps watching the frame (devices/{id}/state and events), as MQTT frames have. */
  announce?: DeviceLink['announce']
  /** A frame's token replaced by a hash alone (a re-pair): a broker's own account for the old one goes (RabbitMQ's device users). */
  credentialsRevoked?: DeviceLink['credentialsRevoked']
  log?: { warn(obj: object, msg: string): void }
}) {
  const { db } = deps
  // Online while it polls on time: its live state goes to apps watching it as an MQTT frame's does.
  const presence = createDevicePresence({
    db,
    log: deps.log ?? { warn: () => {} },
    onPresence: deps.onPresence,
    live: async (deviceId, { state, event }) => {
      if (state) await deps.announce?.(deviceId, state, event)
    },
  })
  // Its own key, derived: a link's signature says nothing about AUTH_SECRET's other uses.
  const linkKey = Buffer.from(hkdfSync('sha256', deps.secret, 'dps-trmnl', 'trmnl link signing', 32))
  // Screens are drawn once per device and kind (a device fetches its setup screen at every boot).
  const screens = new Map<string, Buffer>()

  /** A link to one of the service's own files for a device, signed for an hour (`path` may carry a query, signed with it). */
  function signedUrl(path: string): string {
    const exp = Math.floor(deps.clock().getTime() / 1000) + 3600
    const sig = createHmac('sha256', linkKey).update(`${path}|${exp}`).digest('base64url')
    return `${deps.baseUrl}${path}${path.includes('?') ? '&' : '?'}exp=${exp}&sig=${sig}`
  }

  /** The path of a screen the service draws, in the file format the device draws. */
  const screenPath = (kind: ScreenKind, deviceId: string, format: ScreenFormat) => `/api/trmnl/screens/${kind}/${deviceId}?format=${format}`
  const links: DisplayLinks = {
    image: (deviceId, imageId, format) => signedUrl(`/api/trmnl/images/${deviceId}/${imageId}/${format}`),
    screen: (kind, deviceId, format) => signedUrl(screenPath(kind, deviceId, format)),
  }

  function checkSignature(path: string, exp: number, sig: string): boolean {
    if (!Number.isSafeInteger(exp) || exp * 1000 < deps.clock().getTime()) return false
    const want = createHmac('sha256', linkKey).update(`${path}|${exp}`).digest()
    const got = Buffer.from(sig, 'base64url')
    return got.length === want.length && timingSafeEqual(got, want)
  }

  /** GET /api/setup: a new pending pairing and a new access token, every time (a MAC is no credential). */
  async function setup(h: TrmnlHeaders) {
    // The firmware sends no size with /api/setup: its model's panel (a size when it says one).
    const panel = panelFor(h)
    const profile = profileOf(panel)
    const { screen: format } = formatsFor(panel, h.fwVersion)
    const init = await deps.devices.init({
      display: { width: profile.width, height: profile.height, palette: profile.palette },
      model: h.model ?? 'trmnl',
      firmware: h.fwVersion,
      manufacturer: 'TRMNL',
    })
    const apiKey = randomBytes(24).toString('base64url')
    await insertTrmnlDevice(db, {
      deviceId: init.deviceId,
      mac: h.id!.toUpperCase(),
      apiKeyHash: sha256(apiKey),
      friendlyId: init.pinCode,
      model: h.model ?? null,
      firmware: h.fwVersion ?? null,
    })
    return {
      status: 200,
      // Firmware with a device identity signs its requests from now on (older firmware ignores this).
      auth_mode: 'ed25519' as const,
      api_key: apiKey,
      friendly_id: init.pinCode,
      image_url: signedUrl(screenPath('setup', init.deviceId, format)),
      filename: screenName('setup', init.deviceId, init.pinCode, profile, format, deps.clock()),
    }
  }

  /** The device an access token belongs to, sent with the MAC it was issued to; undefined when unknown. */
  async function authenticate(h: TrmnlHeaders): Promise<TrmnlRow | undefined> {
    if (!h.accessToken || !h.id) return undefined
    const row = await findByApiKeyHash(db, sha256(h.accessToken))
    if (!row || h.id.toUpperCase() !== row.mac) return undefined
    return row
  }

  /**
   * The firmware's Ed25519 device identity (auth_signature.cpp: a signature over the 8-byte
   * big-endian X-Timestamp followed by the 32-byte key). The first valid signed request binds the
   * key to the device; from then on every /api/display and /api/log must carry a valid signature
   * by it, with a timestamp near the service's time and newer than the last one accepted (the
   * method, path and body are not signed, so a captured header set must not work twice).
   * Answers why a request is refused, or null.
   */
  async function checkIdentity(row: TrmnlRow, h: TrmnlHeaders): Promise<string | null> {
    if (h.publicKey === undefined && h.signature === undefined && h.timestamp === undefined)
      return row.publicKey ? 'this device signs its requests: X-Public-Key, X-Signature and X-Timestamp are required' : null
    const key = h.publicKey?.toLowerCase()
    if (
      !key ||
      !/^[0-9a-f]{64}$/.test(key) ||
      !h.signature ||
      !/^[0-9a-f]{128}$/i.test(h.signature) ||
      h.timestamp === undefined ||
      !Number.isSafeInteger(h.timestamp) ||
      h.timestamp < 0
    )
      return 'X-Public-Key (64 hex), X-Signature (128 hex) and X-Timestamp (whole milliseconds) go together'
    // A key of small order verifies every signature (or none); a non-canonical one is no key at all: refused as libsodium does.
    if (isWeakEd25519Key(Buffer.from(key, 'hex'))) return 'X-Public-Key is a weak or non-canonical Ed25519 key'
    if (row.publicKey && row.publicKey !== key) return 'X-Public-Key is not the key this device is bound to'
    // Wall-clock time, not the scheduler's clock: freshness against replay is about real time.
    if (Math.abs(h.timestamp - Date.now()) > SIGNATURE_WINDOW_MS) return 'X-Timestamp is too far from the service’s time (GET /api/time)'
    const message = Buffer.alloc(40)
    message.writeBigUInt64BE(BigInt(h.timestamp), 0)
    Buffer.from(key, 'hex').copy(message, 8)
    if (!verifyEd25519(Buffer.from(key, 'hex'), message, Buffer.from(h.signature, 'hex'))) return 'X-Signature does not verify'
    if (!(await acceptSignature(db, row.deviceId, key, h.timestamp)))
      return 'this signed request was already used (X-Timestamp must increase)'
    return null
  }

  /** GET /api/display. */
  async function display(row: TrmnlRow, h: TrmnlHeaders): Promise<DisplayAnswer> {
    const now = deps.clock()
    let refresh = Math.max(MIN_REFRESH_SECONDS, deps.refreshSeconds)
    const firmware = h.fwVersion ?? row.firmware ?? undefined
    // The panel it has: its Width and Height when it sends them, else its model's.
    const panel = panelFor({ model: h.model ?? row.model ?? undefined, width: h.width, height: h.height })
    const formats = formatsFor(panel, firmware)
    const init = await findDeviceInit(db, row.deviceId)
    const stage = pairingStage(init?.status)
    // Not claimed yet: open for as long as the device keeps asking.
    if (stage === 'pairing') {
      // Wall-clock time, as the pairing flow's own expiry checks use.
      const open = await keepPairingOpen(db, row.deviceId, new Date(Date.now() + deps.pairingSeconds * 1000))
      // A frame holds this token: it is never forgotten (see pruneAbandoned).
      if (!row.lastPolledAt) await recordPoll(db, row.deviceId, { lastPolledAt: now })
      if (open) return waitingAnswer(row, panel, formats.screen, refresh, now, links)
    }
    if (!init || stage !== 'paired') return resetAnswer(refresh)
    let dev = await findDevice(db, row.deviceId)
    if (!dev) return resetAnswer(refresh)
    if (init.status === 'approved') {
      // The same owner paired a device with this MAC before: that device takes the new token,
      // its history kept, and the pairing just made goes. Another owner gets a device of its own.
      const earlier = (await earlierDevicesOf(db, row.mac, row.deviceId, dev.userId))[0]
      if (earlier && (await mayFold(dev, earlier.deviceId))) {
        const moved = await repair(row, earlier.deviceId, now)
        // Folded by this poll or a concurrent one: the token now belongs to the earlier device.
        const current = moved ?? (await findByApiKeyHash(db, row.apiKeyHash))
        if (current && current.deviceId !== row.deviceId) return display(current, h)
      }
      // First poll after the claim: the token becomes the device's secret (its logs and firmware links take it too).
      const issued = await issueCredentials(db, {
        deviceId: row.deviceId,
        secretHash: row.apiKeyHash,
        transport: 'http',
        from: ['approved'],
        at: now,
      })
      dev = issued?.device ?? dev
    } else if (!dev.secretHash) return resetAnswer(refresh)
    // Before anything is read for the answer: messages recorded later are not part of it.
    const upTo = await deps.polls?.starts(dev.id)
    // The size it says is the size it draws (and a picture of another size is never drawn):
    // a device stored with another panel (an X paired as 800×480) takes its own.
    if (dev.display.width !== panel.width || dev.display.height !== panel.height || dev.display.palette !== panel.palette)
      dev =
        (await updateDevice(db, dev.id, {
          display: { ...dev.display, width: panel.width, height: panel.height, palette: panel.palette },
        })) ?? dev
    const schedule = await findSchedule(db, dev.id)
    refresh = refreshFor(scheduleInfo(schedule), now, deps.refreshSeconds)
    const playlistId = (schedule?.current?.state === 'playing' && schedule.current.playlistId) || null

    const battery = batteryPercent(h)
    await applyDeviceReport(db, dev.id, {
      ...(battery !== undefined ? { battery } : {}),
      ...(firmware ? { firmware } : {}),
      shownImageId: row.shownImageId,
      configVersion: dev.desiredConfigVersion,
      reportedAt: now.toISOString(),
    })
    await deps.status(dev.id, { battery, interval: refresh, firmware })
    // The next poll is due after the refresh it is answered now (the header says the last one): a
    // frame asleep for the night is not overdue. Written before it is marked online, so a sweep in
    // between cannot find it late.
    await recordPoll(db, dev.id, { lastPolledAt: now, nextPollAt: new Date(now.getTime() + refresh * 1000) })
    await presence.seen({
      deviceId: dev.id,
      transport: 'http',
      owner: { userId: dev.userId, organizationId: dev.organizationId, name: dev.name },
      at: now,
      data: { remoteAddress: null },
    })

    // Everything the answer is made from is read first; pairedAnswer decides it, then it is written.
    const device = dev
    const cmd = await nextCommand(db, device.id)
    const decision = pairedAnswer(
      {
        now,
        device,
        panel,
        formats,
        refresh,
        variant: device.desiredImageId ? await findVariant(db, device.desiredImageId, formats.variant) : undefined,
        specialFunction: Boolean(h.specialFunction),
        command: cmd,
        offer: await deps
          .firmware()
          ?.currentOffer(device.id)
          .catch(() => null),
        rotation: playlistId ? await rotationOf(playlistId, device.display, formats.variant) : undefined,
      },
      links,
    )
    const { answer } = decision
    if (cmd && decision.commandResult) await ackCommand(db, device.id, cmd.id, decision.commandResult)
    await recordPoll(db, device.id, {
      refreshRate: h.refreshRate ?? row.refreshRate,
      rssi: h.rssi ?? row.rssi,
      batteryVoltage: h.batteryVoltage ?? row.batteryVoltage,
      firmware: firmware ?? null,
      lastFilename: answer.filename,
      nextPollAt: new Date(now.getTime() + answer.refresh_rate * 1000),
    })
    // Once the answer stands: what it carries is delivered by it (a failed poll delivers nothing).
    if (upTo !== undefined)
      await deps.polls?.answered(device.id, {
        upTo,
        commandId: cmd?.id,
        firmware: decision.carriedFirmware,
        imageId: decision.carriedImage,
      })
    return answer
  }

  /** The rotation playing now as rotationNames needs it: its items' images for this display, and their stored variants. */
  async function rotationOf(playlistId: string, display: DisplayProfile, format: string) {
    const imageIds = (await listItems(db, playlistId)).map((i) => itemImageId(i, display)).filter((id): id is string => Boolean(id))
    return { imageIds, variants: await findVariantsOf(db, [...new Set(imageIds)], format) }
  }

  /**
   * Whether a new pairing may take the place of the earlier device with the same MAC: the claimer
   * manages it today, it belongs to the same organization (or none), and it was not disconnected
   * (a disconnected device comes back only by being paired as a new one).
   */
  async function mayFold(fresh: { userId: string; organizationId: string | null }, earlierId: string): Promise<boolean> {
    const earlier = await findDevice(db, earlierId)
    if (!earlier?.secretHash || earlier.organizationId !== fresh.organizationId) return false
    return mayAccess(db, earlier, fresh.userId, 'manage')
  }

  /**
   * Before a claim (devices' claim checks): a pairing of a frame that is already a device the
   * claimer would fold into (same MAC, managed, same organization) is claimed only with
   * `replace: true`, after a 409 naming that device. A MAC is printed on the box: someone who set
   * up a frame with it and got its owner to type the new code would otherwise get their token
   * into the owner's device.
   */
  async function claimCheck(userId: string, rec: { id: string }, input: { organizationId?: string; replace?: boolean }) {
    if (input.replace === true) return
    const row = await findByDeviceId(db, rec.id)
    if (!row) return
    const earlier = (await earlierDevicesOf(db, row.mac, row.deviceId, userId))[0]
    if (!earlier || !(await mayFold({ userId, organizationId: input.organizationId ?? null }, earlier.deviceId))) return
    const dev = await findDevice(db, earlier.deviceId)
    if (!dev) return
    throw appError(
      'DEVICE_ALREADY_PAIRED',
      `This frame is already your device “${dev.name}” (${dev.id}). Check that it shows the code you typed, then claim again with replace: true to give “${dev.name}” this pairing (its history kept); or delete “${dev.name}” first to pair the frame as a new device.`,
    )
  }

  /** Moves a new pairing's token onto the earlier device of the same MAC and owner; answers its row. */
  async function repair(fresh: TrmnlRow, earlierId: string, now: Date): Promise<TrmnlRow | undefined> {
    const issued = await issueCredentials(
      db,
      {
        deviceId: earlierId,
        secretHash: fresh.apiKeyHash,
        transport: 'http',
        from: ['approved', 'active'],
        data: { repaired: true },
        at: now,
      },
      async (tx) => {
        const moved = await moveCredentials(tx, fresh, earlierId)
        if (!moved) return undefined
        await deleteDeviceEvents(tx, fresh.deviceId)
        await deleteDeviceRows(tx, fresh.deviceId)
        return moved
      },
    )
    // The earlier device's old token may still open RabbitMQ (a user made at an MQTT connect):
    // the new one is here as a hash only, so the user goes and the next connect is checked by hash.
    if (issued) await deps.credentialsRevoked?.(earlierId)
    return issued?.prepared
  }

  /** An image a device was given: its bytes; `shown` marks that the device now shows it (synced once it fetched the file it was given). */
  async function imageFile(deviceId: string, imageId: string, format: string, shown: boolean) {
    const variant = await findVariant(db, imageId, format)
    if (!variant) return undefined
    const obj = await deps.storage.get(variant.key)
    if (!obj) return undefined
    // A PNG goes out greyscale (files.ts): the firmware inverts 1-bit palette PNGs.
    const body =
      format === 'png1' || format === 'png-gray4' ? await asGrayscale(variant.sha256, obj.body, format === 'png1' ? 1 : 2) : obj.body
    if (shown) {
      await recordPoll(db, deviceId, { shownImageId: imageId })
      const dev = await findDevice(db, deviceId)
      if (dev) {
        const battery = dev.reported.battery
        await applyDeviceReport(db, dev.id, {
          ...dev.reported,
          ...(battery !== undefined ? { battery } : {}),
          shownImageId: imageId,
          configVersion: dev.desiredConfigVersion,
        })
        await deps.reported(dev.id, { shownImageId: imageId })
      }
    }
    return { body, contentType: variant.contentType }
  }

  /** Greyscale PNGs made from stored palette PNGs, by their digest (the same bytes every time). */
  const grayscale = new Map<string, Buffer>()
  async function asGrayscale(sha: string, png: Buffer, depth: 1 | 2): Promise<Buffer> {
    const key = `${sha}|${depth}`
    const cached = grayscale.get(key)
    if (cached) return cached
    const out = await grayscalePng(png, depth)
    if (grayscale.size >= 100) grayscale.delete(grayscale.keys().next().value as string)
    grayscale.set(key, out)
    return out
  }

  async function screen(kind: 'setup' | 'paired' | 'identify', deviceId: string, format: ScreenFormat = 'bmp1') {
    const init = await findDeviceInit(db, deviceId)
    if (!init) return undefined
    const dev = kind !== 'setup' ? await findDevice(db, deviceId) : undefined
    if (kind !== 'setup' && !dev) return undefined
    const display = dev?.display ?? init.display
    const key = `${kind}|${deviceId}|${dev?.name ?? init.pinCode}|${display.width}x${display.height}|${format}`
    const cached = screens.get(key)
    if (cached) return { body: cached, contentType: format === 'bmp1' ? 'image/bmp' : 'image/png' }
    const profile = { ...display, fit: 'cover' as const }
    const body = dev
      ? kind === 'identify'
        ? await identifyScreen(profile, dev.name, format)
        : await pairedScreen(profile, dev.name, format)
      : await setupScreen(profile, init.pinCode, `${deps.baseUrl}/pair?code=${encodeURIComponent(init.pinCode)}`, format)
    if (screens.size >= 200) screens.delete(screens.keys().next().value as string)
    screens.set(key, body)
    return { body, contentType: format === 'bmp1' ? 'image/bmp' : 'image/png' }
  }

  /** Polling devices that stopped polling: offline, with the same event and notification as an MQTT device. */
  async function sweep(): Promise<number> {
    const now = deps.clock()
    // A day after a pairing nobody claimed and no frame ever polled with, its token goes too.
    await pruneAbandoned(db, new Date(now.getTime() - 86_400_000))
    const due = await overdueDevices(db, now, deps.marginSeconds)
    const gone = await Promise.all(
      due.map((d) =>
        presence.disconnected({
          deviceId: d.id,
          transport: 'http',
          owner: { userId: d.userId, organizationId: d.organizationId, name: d.name },
          at: now,
          reason: 'poll_overdue',
          // A poll since this read keeps it online.
          seenBefore: d.lastSeenAt ?? new Date(0),
          data: { lastSeenAt: d.lastSeenAt?.toISOString() ?? null },
        }),
      ),
    )
    return gone.filter(Boolean).length
  }

  const desiredImage = async (deviceId: string) => (await findDevice(db, deviceId))?.desiredImageId ?? null
  /** Whether the pairing was claimed: there is a device to keep logs for. */
  const claimed = async (deviceId: string) => Boolean(await findDevice(db, deviceId))

  deps.devices.addClaimCheck(claimCheck)

  return { setup, authenticate, checkIdentity, display, imageFile, screen, sweep, checkSignature, desiredImage, claimed }
}

export type TrmnlService = ReturnType<typeof createTrmnlService>
