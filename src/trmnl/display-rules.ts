// What a TRMNL frame is answered on GET /api/display, decided from rows already loaded: the
// service (service.ts) reads, calls these, then writes what they decided. Kept free of the
// database and the clock so each rule is tested on its own (test/trmnl/display-rules.test.ts)
// instead of through a booted app and a polling frame.
import type { DeviceInitStatus } from '../devices/tables.js'
import type { OtaOffer, ScheduleInfo } from '../mqtt/contract.js'
import { cacheName } from './files.js'
import { bandOf, type Panel } from './panels.js'
import type { ScreenFormat } from './screens.js'

/** The least refresh_rate ever answered: a frame told less would wake again at once, for as long as it is told so. */
export const MIN_REFRESH_SECONDS = 60

/** The longest a `sleep` command may put a frame to sleep: a day, so an owner's mistake is not a dead frame. */
const MAX_SLEEP_SECONDS = 86_400

/** The longest a sleep window may stretch one poll: a week (a frame past it polls and is told again). */
const MAX_ASLEEP_SECONDS = 7 * 86_400

/**
 * What a double press of the frame's button does (the firmware stores the `special_function` of
 * every display answer, lib/trmnl/src/special_function.cpp; an answer without it sets "none"):
 * identify, answered with the screen naming the frame.
 */
export const SPECIAL_FUNCTION = 'identify'

/** At most this many names in a `playlist` answer: the firmware caches far fewer images. */
export const PLAYLIST_MAX_FILES = 50

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
  /** What a double press of the frame's button does (SPECIAL_FUNCTION). */
  special_function: string
  /** Seconds the firmware waits for image_url. */
  image_url_timeout: number
  /** Answers a double press (`special_function: true`): the function it ran. */
  action?: string
  friendly_id?: string
}

export type ScreenKind = 'setup' | 'paired' | 'identify'

/** Signed links to the service's own files: the service's signing key and clock stay with it. */
export type DisplayLinks = {
  image(deviceId: string, imageId: string, format: string): string
  screen(kind: ScreenKind, deviceId: string, format: ScreenFormat): string
}

/**
 * The battery level: Percent-Charged when the board says it, else its voltage on a LiPo cell
 * between 3.0 V (empty) and 4.2 V (full), linear. 0 V is a board on USB without a battery
 * reading: unknown, not empty.
 */
export function batteryPercent(h: { batteryVoltage?: number; percentCharged?: number }): number | undefined {
  if (h.percentCharged !== undefined) return h.percentCharged
  if (!h.batteryVoltage) return undefined
  return Math.round(Math.max(0, Math.min(1, (h.batteryVoltage - 3.0) / 1.2)) * 1000) / 10
}

export type Formats = { variant: 'bmp1' | 'png1' | 'png-gray4'; screen: ScreenFormat }

/**
 * The files a frame is sent: before 1.5.2 the 1-bit BMP (the only file that firmware draws, and
 * only on an 800×480 panel), from then on a greyscale PNG of 2 bits for a 4-grey panel, 1 bit
 * otherwise. `variant` is the stored image variant its pixels come from.
 */
export function formatsFor(panel: Panel, firmware: string | undefined): Formats {
  if (bandOf(firmware) === 'bmp' && panel.drawsBmp && panel.palette === 'bw') return { variant: 'bmp1', screen: 'bmp1' }
  if (panel.palette === 'gray4' && panel.maxPngBits >= 2) return { variant: 'png-gray4', screen: 'png2' }
  return { variant: 'png1', screen: 'png1' }
}

/** Seconds the firmware waits for an image download (image_url_timeout, at most 65 it takes): more for the X's larger files. */
export const imageTimeout = (panel: { width: number; height: number }) => (panel.width * panel.height > 1_000_000 ? 60 : 30)

/** The name the firmware caches a stored image's file by: it changes with the bytes (see files.ts). */
export const imageName = (sha256: string, format: string, now: Date, fresh = false) => cacheName(`image|${sha256}|${format}`, now, fresh)

/** A screen's cache name: it changes with what is drawn on it, its size and format. */
export const screenName = (
  kind: string,
  deviceId: string,
  text: string,
  display: { width: number; height: number },
  format: string,
  now: Date,
  fresh = false,
) => cacheName(`${kind}|${deviceId}|${text}|${display.width}x${display.height}|${format}`, now, fresh)

/**
 * Where a polling frame's pairing stands: `pairing` until claimed (its pairing kept open while it
 * polls), `paired` once claimed, `gone` when deleted, disconnected or denied (the frame is told to
 * reset: it forgets its token and Wi-Fi and calls /api/setup again).
 */
export function pairingStage(status: DeviceInitStatus | undefined): 'pairing' | 'paired' | 'gone' {
  if (status === 'pending' || status === 'expired') return 'pairing'
  if (status === 'approved' || status === 'active') return 'paired'
  return 'gone'
}

/**
 * Seconds until the next poll: the service's rate, shortened to the device's next scheduled
 * change, stretched over a sleep window to its end (a battery frame sleeps through the night);
 * never under MIN_REFRESH_SECONDS.
 */
export function refreshFor(plan: Pick<ScheduleInfo, 'sleepingUntil' | 'nextChangeAt'> | null, now: Date, refreshSeconds: number): number {
  const until = (iso: string | null) => (iso ? Math.ceil((Date.parse(iso) - now.getTime()) / 1000) : Number.NaN)
  const asleep = until(plan?.sleepingUntil ?? null)
  if (asleep > 0) return Math.max(MIN_REFRESH_SECONDS, Math.min(asleep, MAX_ASLEEP_SECONDS))
  const next = until(plan?.nextChangeAt ?? null)
  const refresh = next > 0 ? Math.min(refreshSeconds, next) : refreshSeconds
  return Math.max(MIN_REFRESH_SECONDS, refresh)
}

/** The answer to a frame not claimed yet: the setup screen with its code, asked again after `refresh`. */
export function waitingAnswer(
  row: { deviceId: string; friendlyId: string },
  panel: Panel,
  format: ScreenFormat,
  refresh: number,
  now: Date,
  links: DisplayLinks,
): DisplayAnswer {
  return {
    status: 202,
    image_url: links.screen('setup', row.deviceId, format),
    filename: screenName('setup', row.deviceId, row.friendlyId, panel, format, now),
    refresh_rate: refresh,
    update_firmware: false,
    firmware_url: null,
    reset_firmware: false,
    special_function: SPECIAL_FUNCTION,
    image_url_timeout: imageTimeout(panel),
    friendly_id: row.friendlyId,
  }
}

/** The answer that makes the firmware forget its token and Wi-Fi (see pairingStage). */
export function resetAnswer(refresh: number): DisplayAnswer {
  return {
    status: 0,
    image_url: null,
    filename: null,
    refresh_rate: refresh,
    update_firmware: false,
    firmware_url: null,
    reset_firmware: true,
    special_function: SPECIAL_FUNCTION,
    image_url_timeout: 30,
  }
}

/** A stored image variant's parts the answer uses. */
type VariantInfo = { sha256: string; width: number; height: number }

export type PairedDisplayInput = {
  now: Date
  device: { id: string; name: string; desiredImageId: string | null; display: { width: number; height: number } }
  panel: Panel
  formats: Formats
  /** From refreshFor: what the answer asks for unless a sleep command says otherwise. */
  refresh: number
  /** The desired image's stored variant in `formats.variant`, when there is one. */
  variant: VariantInfo | undefined
  /** The frame's button was double-pressed (the `special_function: true` header). */
  specialFunction: boolean
  /** The oldest command waiting for the device. */
  command: { id: string; command: string; args: Record<string, unknown> } | undefined
  offer: OtaOffer | null | undefined
  /** The rotation playing now: its items' image ids in order, and their stored variants in `formats.variant`. */
  rotation: { imageIds: string[]; variants: (VariantInfo & { imageId: string })[] } | undefined
}

export type PairedDisplayDecision = {
  answer: DisplayAnswer
  /** What the waiting command is acknowledged with (undefined when there was none). */
  commandResult: Record<string, unknown> | undefined
  /** The image the answer names, delivered by it; none when it names a screen. */
  carriedImage: string | undefined
  /** Whether the answer offers firmware (delivering the offer). */
  carriedFirmware: boolean
}

/**
 * The answer to a claimed frame: its desired image when a variant of the panel's own size exists
 * (else the "paired" screen), the identify screen on a double press or an identify command, a
 * fresh file name for a refresh command, a sleep command's refresh_rate, the firmware offer, and
 * the rotation's file names.
 */
export function pairedAnswer(input: PairedDisplayInput, links: DisplayLinks): PairedDisplayDecision {
  const { now, device: dev, panel, formats } = input
  const format = formats.variant
  let refresh = input.refresh
  const imageId = dev.desiredImageId
  // Only a file of the panel's own size: the firmware flips a BMP with the panel's size, and refuses a larger PNG.
  const variant = input.variant && input.variant.width === panel.width && input.variant.height === panel.height ? input.variant : undefined
  let image_url: string
  let filename: string
  let refreshName: () => string
  let carriedImage: string | undefined
  if (imageId && variant) {
    image_url = links.image(dev.id, imageId, format)
    // The firmware skips the download when it has a file of this name: the name changes with the bytes.
    filename = imageName(variant.sha256, format, now)
    refreshName = () => imageName(variant.sha256, format, now, true)
    carriedImage = imageId
  } else {
    // Nothing sent yet (or only for another panel size): the "paired" screen.
    image_url = links.screen('paired', dev.id, formats.screen)
    filename = screenName('paired', dev.id, dev.name, panel, formats.screen, now)
    refreshName = () => screenName('paired', dev.id, dev.name, panel, formats.screen, now, true)
  }
  const identify = () => {
    carriedImage = undefined
    image_url = links.screen('identify', dev.id, formats.screen)
    filename = screenName('identify', dev.id, dev.name, panel, formats.screen, now)
  }
  let action: string | undefined
  // A double press of the frame's button runs its special function (the one every answer sets): identify.
  if (input.specialFunction) {
    identify()
    action = SPECIAL_FUNCTION
  }

  // A command waiting for the device is carried out the way polling firmware can: identify shows
  // a screen naming the frame (its own file name, so it is drawn), refresh sends the image again
  // under a new name, sleep answers a refresh_rate that long. The firmware takes no other remote
  // action (its special_function is what a double press of its button does, the owner's setting).
  const cmd = input.command
  let commandResult: Record<string, unknown> | undefined
  if (cmd) {
    commandResult = { ok: true, delivered: 'display' }
    if (cmd.command === 'identify') {
      identify()
    } else if (cmd.command === 'refresh') {
      // A name the frame has not cached, with the same first 13 characters: it drops the old file and draws this one.
      filename = refreshName()
    } else if (cmd.command === 'sleep' && Number.isInteger(cmd.args.seconds)) {
      refresh = Math.max(MIN_REFRESH_SECONDS, Math.min(MAX_SLEEP_SECONDS, Number(cmd.args.seconds)))
      commandResult = { ...commandResult, seconds: refresh }
    } else {
      commandResult = { ok: false, error: `${cmd.command} is not available on TRMNL firmware (it polls, and restarts only by itself)` }
    }
  }

  const offer = input.offer && input.offer.version !== null ? input.offer : undefined
  return {
    answer: {
      status: 0,
      image_url,
      filename,
      refresh_rate: refresh,
      playlist: rotationNames(filename, input.rotation, dev.display, format, now),
      update_firmware: Boolean(offer),
      firmware_url: offer ? offer.url : null,
      reset_firmware: false,
      special_function: SPECIAL_FUNCTION,
      image_url_timeout: imageTimeout(panel),
      ...(action ? { action } : {}),
    },
    commandResult,
    carriedImage,
    carriedFirmware: Boolean(offer),
  }
}

/**
 * The `playlist` answer: the file names of the rotation playing now, as this device would get
 * them (the firmware prunes its image cache to these), the file shown now first. A prompt's
 * picture is new at each turn, so it has no name until then; an image with no variant of the
 * device's size is left out (the frame would refuse it).
 */
function rotationNames(
  shown: string,
  rotation: PairedDisplayInput['rotation'],
  display: { width: number; height: number },
  format: string,
  now: Date,
): string[] {
  const files = [shown]
  if (!rotation) return files
  const sized = rotation.variants.filter((v) => v.width === display.width && v.height === display.height)
  const shas = new Map(sized.map((v) => [v.imageId, v.sha256]))
  for (const id of rotation.imageIds) {
    const sha = shas.get(id)
    const name = sha && imageName(sha, format, now)
    if (name && !files.includes(name)) files.push(name)
  }
  return files.slice(0, PLAYLIST_MAX_FILES)
}
