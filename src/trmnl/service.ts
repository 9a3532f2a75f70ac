// Devices running TRMNL's open firmware, which poll over HTTP instead of holding an MQTT session
// (docs/trmnl.md). They pair with the same code flow (the firmware paints the code it gets as
// friendly_id), show what the device's desired image is (sent, generated or scheduled exactly as
// for MQTT frames), report battery and firmware with every poll, take identify and sleep as
// special functions and firmware offers as update_firmware, and are online while they poll on time.
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import semver from 'semver'
import type { Database } from '../db/client.js'
import {
  ackCommand,
  applyDeviceReport,
  deleteDeviceRows,
  findDevice,
  findDeviceInit,
  setDeviceSecret,
  transitionDeviceInit,
} from '../devices/repository.js'
import { requireAccess } from '../devices/access.js'
import type { DeviceService } from '../devices/service.js'
import { deleteDeviceEvents, insertEvent } from '../events/repository.js'
import type { FirmwareService } from '../firmware/service.js'
import { mainVariant } from '../images/convert.js'
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
  findVariant,
  findVariantsOf,
  insertTrmnlDevice,
  markOnline,
  markOverdue,
  moveCredentials,
  acceptSignature,
  keepPairingOpen,
  nextCommand,
  pruneAbandoned,
  recordPoll,
  type TrmnlRow,
} from './repository.js'
import { identifyScreen, pairedScreen, setupScreen } from './screens.js'

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

/** Models the firmware names, and their panels; anything else is taken from the Width and Height headers, 1-bit. */
const MODELS: Record<string, { width: number; height: number; palette: 'bw' | 'gray4' }> = {
  og: { width: 800, height: 480, palette: 'bw' },
  og_png: { width: 800, height: 480, palette: 'bw' },
  v2: { width: 1872, height: 1404, palette: 'gray4' },
}

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
}

/** How far a signed request's X-Timestamp may be from the service's time (it came from GET /api/time moments before). */
const SIGNATURE_WINDOW_MS = 5 * 60_000

/**
 * The battery level: Percent-Charged when the board says it, else its voltage on a LiPo cell
 * between 3.0 V (empty) and 4.2 V (full), linear. 0 V is a board on USB without a battery
 * reading: unknown, not empty.
 */
function batteryPercent(h: Pick<TrmnlHeaders, 'batteryVoltage' | 'percentCharged'>): number | undefined {
  if (h.percentCharged !== undefined) return h.percentCharged
  if (!h.batteryVoltage) return undefined
  return Math.round(Math.max(0, Math.min(1, (h.batteryVoltage - 3.0) / 1.2)) * 1000) / 10
}

function profileFor(h: Pick<TrmnlHeaders, 'model' | 'width' | 'height'>): DisplayProfile {
  const known = h.model ? MODELS[h.model] : undefined
  if (known) return { ...known, fit: 'cover' }
  // Unknown boards: their own size, within what e-paper panels come in (every pixel is drawn on each setup screen).
  const side = (v: number | undefined, d: number) => (v && v >= 16 && v <= 2048 ? v : d)
  return { width: side(h.width, 800), height: side(h.height, 480), palette: 'bw', fit: 'cover' }
}

/** At most this many names in a `playlist` answer: the firmware caches far fewer images. */
const PLAYLIST_MAX_FILES = 50

/** The name the firmware caches an image by: it changes with the bytes. */
const fileName = (imageId: string, sha256: string) => `${imageId}-${sha256.slice(0, 12)}`

/** Firmware 1.5.2 and later draws PNG (smaller on the air); older firmware gets the 1-bit BMP every version draws. */
function formatFor(display: DisplayProfile, firmware: string | undefined): string {
  const version = semver.coerce(firmware ?? '')
  if (display.palette === 'bw') return version && semver.gte(version, '1.5.2') ? 'png1' : 'bmp1'
  return mainVariant(display)
}

export type DisplayAnswer = {
  status: number
  image_url: string | null
  filename: string | null
  refresh_rate: number
  /** Paired devices only: the file names of the live rotation. */
  playlist?: string[]
  update_firmware: boolean
  firmware_url: string | null
  reset_firmware: boolean
  friendly_id?: string
}

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
  status: (deviceId: string, report: { battery?: number; interval?: number; firmware?: string }) => Promise<unknown>
  onPresence?: (change: PresenceChange) => void
}) {
  const { db } = deps
  // Its own key, derived: a link's signature says nothing about AUTH_SECRET's other uses.
  const linkKey = Buffer.from(hkdfSync('sha256', deps.secret, 'dps-trmnl', 'trmnl link signing', 32))
  // Screens are drawn once per device and kind (a device fetches its setup screen at every boot).
  const screens = new Map<string, Buffer>()

  /** A link to one of the service's own files for a device, signed for an hour. */
  function signedUrl(path: string): string {
    const exp = Math.floor(deps.clock().getTime() / 1000) + 3600
    const sig = createHmac('sha256', linkKey).update(`${path}|${exp}`).digest('base64url')
    return `${deps.baseUrl}${path}?exp=${exp}&sig=${sig}`
  }

  function checkSignature(path: string, exp: number, sig: string): boolean {
    if (!Number.isSafeInteger(exp) || exp * 1000 < deps.clock().getTime()) return false
    const want = createHmac('sha256', linkKey).update(`${path}|${exp}`).digest()
    const got = Buffer.from(sig, 'base64url')
    return got.length === want.length && timingSafeEqual(got, want)
  }

  /** GET /api/setup: a new pending pairing and a new access token, every time (a MAC is no credential). */
  async function setup(h: TrmnlHeaders) {
    const profile = profileFor(h)
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
      image_url: signedUrl(`/api/trmnl/screens/setup/${init.deviceId}`),
      filename: `setup-${init.pinCode}`,
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
    if (!key || !/^[0-9a-f]{64}$/.test(key) || !h.signature || !/^[0-9a-f]{128}$/i.test(h.signature) || h.timestamp === undefined)
      return 'X-Public-Key (64 hex), X-Signature (128 hex) and X-Timestamp (ms) go together'
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

  const waiting = (row: TrmnlRow, refresh: number): DisplayAnswer => ({
    status: 202,
    image_url: signedUrl(`/api/trmnl/screens/setup/${row.deviceId}`),
    filename: `setup-${row.friendlyId}`,
    refresh_rate: refresh,
    update_firmware: false,
    firmware_url: null,
    reset_firmware: false,
    friendly_id: row.friendlyId,
  })

  const reset = (refresh: number): DisplayAnswer => ({
    status: 0,
    image_url: null,
    filename: null,
    refresh_rate: refresh,
    update_firmware: false,
    firmware_url: null,
    reset_firmware: true,
  })

  /**
   * Seconds until the next poll: the service's rate, shortened to the device's next scheduled
   * change, stretched over a sleep window to its end (a battery frame sleeps through the night).
   */
  /** The refresh the device is asked for (until its next turn, or its wake-up), and the playlist playing now. */
  async function planFor(deviceId: string, now: Date): Promise<{ refresh: number; playlistId: string | null }> {
    const row = await findSchedule(db, deviceId)
    const plan = scheduleInfo(row)
    const playlistId = (row?.current?.state === 'playing' && row.current.playlistId) || null
    const until = (iso: string | null) => (iso ? Math.ceil((Date.parse(iso) - now.getTime()) / 1000) : Number.NaN)
    const asleep = until(plan?.sleepingUntil ?? null)
    if (asleep > 0) return { refresh: Math.min(asleep, 7 * 86_400), playlistId }
    const next = until(plan?.nextChangeAt ?? null)
    return { refresh: next > 0 ? Math.max(5, Math.min(deps.refreshSeconds, next)) : deps.refreshSeconds, playlistId }
  }

  /**
   * The `playlist` answer: the file names of the rotation playing now, as this device would get
   * them (the firmware prunes its image cache to these), the file shown now first. A prompt's
   * picture is new at each turn, so it has no name until then.
   */
  async function rotationFiles(playlistId: string | null, display: DisplayProfile, format: string, shown: string): Promise<string[]> {
    const files = [shown]
    if (!playlistId) return files
    const ids = (await listItems(db, playlistId)).map((i) => itemImageId(i, display)).filter((id): id is string => Boolean(id))
    const shas = new Map((await findVariantsOf(db, [...new Set(ids)], format)).map((v) => [v.imageId, v.sha256]))
    for (const id of ids) {
      const sha = shas.get(id)
      const name = sha && fileName(id, sha)
      if (name && !files.includes(name)) files.push(name)
    }
    return files.slice(0, PLAYLIST_MAX_FILES)
  }

  /** GET /api/display. */
  async function display(row: TrmnlRow, h: TrmnlHeaders): Promise<DisplayAnswer> {
    const now = deps.clock()
    let refresh = deps.refreshSeconds
    const init = await findDeviceInit(db, row.deviceId)
    // Not claimed yet: open for as long as the device keeps asking.
    if (init && (init.status === 'pending' || init.status === 'expired')) {
      // Wall-clock time, as the pairing flow's own expiry checks use.
      const open = await keepPairingOpen(db, row.deviceId, new Date(Date.now() + deps.pairingSeconds * 1000))
      if (open) return waiting(row, refresh)
    }
    // Deleted, disconnected or denied (the firmware then forgets its token and Wi-Fi and calls /api/setup again).
    if (!init || (init.status !== 'approved' && init.status !== 'active')) return reset(refresh)
    let dev = await findDevice(db, row.deviceId)
    if (!dev) return reset(refresh)
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
      if (await transitionDeviceInit(db, row.deviceId, ['approved'], 'active', { credentialsIssuedAt: now })) {
        dev = (await setDeviceSecret(db, row.deviceId, row.apiKeyHash)) ?? dev
        await insertEvent(db, {
          type: 'device.credentials_issued',
          deviceId: dev.id,
          userId: dev.userId,
          organizationId: dev.organizationId,
          data: { transport: 'http' },
        })
      }
    } else if (!dev.secretHash) return reset(refresh)
    const plan = await planFor(dev.id, now)
    refresh = plan.refresh

    const battery = batteryPercent(h)
    const firmware = h.fwVersion ?? row.firmware ?? undefined
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
    const online = await markOnline(db, dev.id, now, { transport: 'http', remoteAddress: null })
    if (online) deps.onPresence?.({ deviceId: dev.id, deviceName: dev.name, userId: dev.userId, online: true, at: now })

    let image_url: string
    let filename: string
    const imageId = dev.desiredImageId
    const format = formatFor(dev.display, firmware)
    const variant = imageId ? await findVariant(db, imageId, format) : undefined
    if (imageId && variant) {
      image_url = signedUrl(`/api/trmnl/images/${dev.id}/${imageId}/${format}`)
      // The firmware skips the download when the name is the one it shows: the name changes with the bytes.
      filename = fileName(imageId, variant.sha256)
    } else {
      image_url = signedUrl(`/api/trmnl/screens/paired/${dev.id}`)
      filename = 'paired'
    }

    // A command waiting for the device is carried out the way polling firmware can: identify shows
    // a screen naming the frame (its own file name, so it is drawn), refresh sends the image again
    // under a new name, sleep answers a refresh_rate that long. The firmware takes no other remote
    // action (its special_function is what a double press of its button does, the owner's setting).
    const cmd = await nextCommand(db, dev.id)
    if (cmd) {
      const tag = cmd.id.slice(0, 8)
      let result: Record<string, unknown> = { ok: true, delivered: 'display' }
      if (cmd.command === 'identify') {
        image_url = signedUrl(`/api/trmnl/screens/identify/${dev.id}`)
        filename = `identify-${tag}`
      } else if (cmd.command === 'refresh') {
        filename = `${filename}-r${tag}`
      } else if (cmd.command === 'sleep' && Number.isInteger(cmd.args.seconds)) {
        refresh = Math.max(1, Math.min(86_400, Number(cmd.args.seconds)))
        result = { ...result, seconds: refresh }
      } else {
        result = { ok: false, error: `${cmd.command} is not available on TRMNL firmware (it polls, and restarts only by itself)` }
      }
      await ackCommand(db, dev.id, cmd.id, result)
    }

    const offer = await deps
      .firmware()
      ?.currentOffer(dev.id)
      .catch(() => null)
    await recordPoll(db, dev.id, {
      refreshRate: h.refreshRate ?? row.refreshRate,
      rssi: h.rssi ?? row.rssi,
      batteryVoltage: h.batteryVoltage ?? row.batteryVoltage,
      firmware: firmware ?? null,
      lastFilename: filename,
      nextPollAt: new Date(now.getTime() + refresh * 1000),
    })
    return {
      status: 0,
      image_url,
      filename,
      refresh_rate: refresh,
      playlist: await rotationFiles(plan.playlistId, dev.display, format, filename),
      update_firmware: Boolean(offer && offer.version !== null),
      firmware_url: offer && offer.version !== null ? offer.url : null,
      reset_firmware: false,
    }
  }

  /**
   * Whether a new pairing may take the place of the earlier device with the same MAC: the claimer
   * manages it today, it belongs to the same organization (or none), and it was not disconnected
   * (a disconnected device comes back only by being paired as a new one).
   */
  async function mayFold(fresh: { userId: string; organizationId: string | null }, earlierId: string): Promise<boolean> {
    const earlier = await findDevice(db, earlierId)
    if (!earlier?.secretHash || earlier.organizationId !== fresh.organizationId) return false
    return requireAccess(db, earlier, fresh.userId, 'manage').then(
      () => true,
      () => false,
    )
  }

  /** Moves a new pairing's token onto the earlier device of the same MAC and owner; answers its row. */
  async function repair(fresh: TrmnlRow, earlierId: string, now: Date): Promise<TrmnlRow | undefined> {
    return db.transaction(async (tx) => {
      const moved = await moveCredentials(tx, fresh, earlierId)
      if (!moved) return undefined
      await deleteDeviceEvents(tx, fresh.deviceId)
      await deleteDeviceRows(tx, fresh.deviceId)
      const dev = await setDeviceSecret(tx, earlierId, fresh.apiKeyHash)
      await transitionDeviceInit(tx, earlierId, ['approved', 'active'], 'active', { credentialsIssuedAt: now })
      await insertEvent(tx, {
        type: 'device.credentials_issued',
        deviceId: earlierId,
        userId: dev?.userId,
        organizationId: dev?.organizationId,
        data: { transport: 'http', repaired: true },
      })
      return moved
    })
  }

  /** An image a device was given: its bytes; `shown` marks that the device now shows it (synced once it fetched the file it was given). */
  async function imageFile(deviceId: string, imageId: string, format: string, shown: boolean) {
    const variant = await findVariant(db, imageId, format)
    if (!variant) return undefined
    const obj = await deps.storage.get(variant.key)
    if (!obj) return undefined
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
    return { body: obj.body, contentType: variant.contentType }
  }

  async function screen(kind: 'setup' | 'paired' | 'identify', deviceId: string) {
    const init = await findDeviceInit(db, deviceId)
    if (!init) return undefined
    const dev = kind !== 'setup' ? await findDevice(db, deviceId) : undefined
    if (kind !== 'setup' && !dev) return undefined
    const key = `${kind}|${deviceId}|${dev?.name ?? init.pinCode}`
    const cached = screens.get(key)
    if (cached) return cached
    const profile = { ...init.display, fit: 'cover' as const }
    const body = dev
      ? kind === 'identify'
        ? await identifyScreen(dev.display, dev.name)
        : await pairedScreen(dev.display, dev.name)
      : await setupScreen(profile, init.pinCode, `${deps.baseUrl}/pair?code=${encodeURIComponent(init.pinCode)}`)
    if (screens.size >= 200) screens.delete(screens.keys().next().value as string)
    screens.set(key, body)
    return body
  }

  /** Polling devices that stopped polling: offline, with the same event and notification as an MQTT device. */
  async function sweep(): Promise<number> {
    const now = deps.clock()
    // A day after a pairing nobody claimed, its token goes too (a setup per boot would pile them up).
    await pruneAbandoned(db, new Date(now.getTime() - 86_400_000))
    const gone = await markOverdue(db, now, deps.marginSeconds)
    for (const d of gone)
      deps.onPresence?.({ deviceId: d.id, deviceName: d.name, userId: d.userId, online: false, reason: 'poll_overdue', at: now })
    return gone.length
  }

  const desiredImage = async (deviceId: string) => (await findDevice(db, deviceId))?.desiredImageId ?? null
  /** Whether the pairing was claimed: there is a device to keep logs for. */
  const claimed = async (deviceId: string) => Boolean(await findDevice(db, deviceId))

  return { setup, authenticate, checkIdentity, display, imageFile, screen, sweep, checkSignature, desiredImage, claimed }
}

export type TrmnlService = ReturnType<typeof createTrmnlService>

declare module 'fastify' {
  interface FastifyInstance {
    trmnl?: TrmnlService
  }
}
