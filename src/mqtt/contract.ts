// The device wire contract: the topic layout the service, the simulator, the benchmarks and the
// companion apps share, what each topic carries, and the presence vocabulary. Plain data only, no imports,
// so any of them (device-sim/ included) can take it without pulling in the service.
//   downlink (service → device): devices/{id}/prompt | image | config (retained) | cmd | ota (retained)
//   uplink   (device → service): devices/{id}/up/status | up/ack | up/log | up/ota
//   presence (broker, retained):  devices/{id}/state        events (service): devices/{id}/events
//   fleet-wide (service → every device): fleet/cmd — devices may subscribe, only the service publishes
// The access rules on this layout are in topic-rules.ts.

export const downlinkKinds = ['prompt', 'image', 'config', 'cmd', 'ota'] as const
export type DownlinkKind = (typeof downlinkKinds)[number]
/** Kinds where only the newest message matters: an older config, desired image or firmware offer is never sent once a newer one exists. */
export const replacingKinds: ReadonlySet<string> = new Set<DownlinkKind>(['config', 'image', 'ota'])
export const uplinkKinds = ['status', 'ack', 'log', 'ota'] as const
export type UplinkKind = (typeof uplinkKinds)[number]

/** One message to every device at once: a device subscribes to it; nobody but the service publishes. */
export const FLEET_TOPIC = 'fleet/cmd'

/** Every device's uplink, for a service that consumes it as a client of an external broker. */
export const UPLINK_FILTER = 'devices/+/up/+'

export const topicFor = (deviceId: string, kind: DownlinkKind | 'state' | 'events') => `devices/${deviceId}/${kind}`

export const uplinkTopic = (deviceId: string, kind: UplinkKind) => `devices/${deviceId}/up/${kind}`

/** A filter that reaches all of a device's own topics at once (and nothing of another device's). */
export const deviceFilter = (deviceId: string, wildcard: '+' | '#') => `devices/${deviceId}/${wildcard}`

/** The topics a paired device is given with its credentials. */
export function deviceTopics(deviceId: string) {
  return {
    prompt: topicFor(deviceId, 'prompt'),
    image: topicFor(deviceId, 'image'),
    config: topicFor(deviceId, 'config'),
    cmd: topicFor(deviceId, 'cmd'),
    ota: topicFor(deviceId, 'ota'),
    state: topicFor(deviceId, 'state'),
    status: uplinkTopic(deviceId, 'status'),
    ack: uplinkTopic(deviceId, 'ack'),
    log: uplinkTopic(deviceId, 'log'),
    otaProgress: uplinkTopic(deviceId, 'ota'),
  }
}

/** Parses devices/{id}/... into its parts; null for anything else. */
export function parseDeviceTopic(topic: string): { deviceId: string; rest: string[] } | null {
  const parts = topic.split('/')
  if (parts.length < 3 || parts[0] !== 'devices' || !parts[1]) return null
  return { deviceId: parts[1], rest: parts.slice(2) }
}

/** Why a device went offline: in its retained state, its disconnect events and the owner's notification. */
export type DisconnectReason =
  | 'client_disconnect'
  | 'keepalive_timeout'
  | 'takeover'
  | 'kicked'
  | 'socket_error'
  | 'server_shutdown'
  | 'node_lost'
  /** A device that polls over HTTP (TRMNL) is overdue by more than its refresh interval. */
  | 'poll_overdue'

/** A device that really went online or offline: not a takeover, not a shutdown or the reconnect after one. */
export type PresenceChange = { deviceId: string; deviceName: string; userId: string; online: boolean; reason?: DisconnectReason; at: Date }

/** A display as a device describes it (in its config message the service echoes it back). */
type WireDisplay = { width: number; height: number; palette: string; fit?: string; inline?: boolean; dither?: string }

/** devices/{id}/prompt: a prompt sent to the device. */
export type PromptMessage = {
  promptId: string
  text: string
  negativeText?: string | null
  style?: string | null
  model?: string | null
  createdAt?: string
}

/** devices/{id}/image: an image converted for the device's display; `data` (base64) when it asked for small images inline. */
export type ImageMessage = {
  imageId: string
  url: string
  format: string
  width: number
  height: number
  bytes: number
  sha256: string
  contentType: string
  data?: string
}

/** devices/{id}/config (retained): the desired configuration, versioned. */
export type ConfigMessage = {
  version: number
  name?: string | null
  selectedModel?: string | null
  color?: string | null
  icon?: string | null
  display?: WireDisplay
  /** The device's day plan, when it has one: when to sleep, and until when nothing will change. */
  schedule?: ScheduleInfo | null
  /** The Ed25519 public key (raw, base64) firmware offers are signed with. */
  firmwareKey?: string
}

/**
 * devices/{id}/ota (retained): the firmware to install. The device downloads `url` (signed,
 * expiring; a fresh one from GET /api/device/{id}/firmware/offer with its secret), checks the
 * bytes against `sha256` and `size`, and `signature` (Ed25519 over the manifest
 * "dps-firmware-v1\n{model}\n{version}\n{sha256}\n{size}\n") against the firmware key, then
 * installs and reports on up/ota. `version: null` withdraws an offer not yet taken up.
 */
export type OtaOffer =
  | {
      releaseId: string
      model: string
      version: string
      url: string
      urlExpiresAt: string
      sha256: string
      size: number
      signature: string
    }
  | { version: null }

export const otaProgressStates = ['downloading', 'verifying', 'installing', 'succeeded', 'failed'] as const

/** devices/{id}/up/ota: how far the device got with the offered version. */
export type OtaReport = { version: string; state: (typeof otaProgressStates)[number]; reason?: string }

/** In the config: the sleep windows (local times in `timeZone`) and the next scheduled change, so battery firmware can sleep until then. */
export type ScheduleInfo = {
  timeZone: string
  sleep: Array<{ from: string; to: string }>
  /** When what the device shows (or whether it sleeps) next changes; null when nothing is planned. */
  nextChangeAt: string | null
  /** Set while a sleep window lasts: nothing is sent before then. */
  sleepingUntil: string | null
}

/** devices/{id}/up/log: a batch of what the device logged (at most 100 entries, 64 KiB). */
export type LogEntry = {
  at?: string | number
  level?: 'debug' | 'info' | 'warn' | 'error'
  message: string
  fields?: Record<string, unknown>
}

/** devices/{id}/cmd: a command to carry out and acknowledge with its commandId. */
export type CommandMessage = { commandId: string; command: string; args?: { seconds?: number }; issuedAt?: string }

/** As sent: every downlink message carries `seq`, the service's per-device sequence number; acknowledging it says it arrived. */
export type Numbered<T> = T & { seq?: number }

/** devices/{id}/up/status: what the device runs and shows; `sessionPresent` in the first report after connecting. */
export type StatusReport = {
  battery: number
  firmware: string
  shownImageId: string | null
  configVersion: number
  sessionPresent?: boolean
  /** Seconds until the next scheduled report: a device quiet for three of them is reported silent. */
  interval?: number
}

/**
 * devices/{id}/up/ack: a message or command arrived (and, for a command, whether it was carried
 * out). The service keeps these fields, each bounded (src/mqtt/uplink.ts), and drops the rest.
 */
export type AckReport = {
  seq?: number
  kind?: DownlinkKind
  ok: boolean
  error?: string
  commandId?: string
  command?: string
  promptId?: string | null
  imageId?: string
  version?: number
  sha256?: string
  shownImageId?: string | null
  seconds?: number
}
