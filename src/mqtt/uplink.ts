// Uplink from devices: up/status updates what the device reports (battery, firmware, shown
// image, config version → isSynced); up/ack acknowledges a command or a numbered downlink
// message. What a device sends is bounded: a size per topic, known fields of bounded length, and
// an acknowledgement is stored only when it names something real. The embedded broker stores a
// message before it acknowledges it (receive, from authorizePublish; docs/mqtt.md).
import type { Client, PublishPacket } from 'aedes'
import type { Database } from '../db/client.js'
import { ackCommand, applyDeviceReport } from '../devices/repository.js'
import type { DeviceReport } from '../devices/tables.js'
import { insertEvent } from '../events/repository.js'
import type { ClientMeta } from './client-meta.js'
import { type OtaReport, otaProgressStates, parseDeviceTopic } from './contract.js'

/**
 * Largest payload accepted per uplink topic; a status or an ack is a few hundred bytes. By the
 * topic's last level, which the device chooses: a Map, so `constructor` is just an unknown kind.
 */
const UPLINK_MAX_BYTES: ReadonlyMap<string, number> = new Map([
  ['status', 4096],
  ['ack', 4096],
  ['log', 256 * 1024],
  ['ota', 4096],
])

export type UplinkStats = { applied: number; invalid: number; oversized: number; unmatchedAcks: number }

export type UplinkHooks = {
  /** A numbered downlink message was acknowledged; resolves with its kind, or undefined when the device never got such a message. */
  delivered?(deviceId: string, seq: number): Promise<string | undefined>
  /** The device reported the config version it applies and the image it shows. */
  reported?(deviceId: string, report: { configVersion?: number; shownImageId?: string | null }): Promise<void>
  /**
   * The device says it started a session the broker had no state for (sessionPresent false in its
   * first status after connecting). Only the external-broker mode needs it: the embedded broker
   * sees CONNACK itself.
   */
  newSession?(deviceId: string): void
  /**
   * A batch of log entries (`raw` undefined when it was not JSON); the device logs service checks
   * it against its limits and counts what it refuses.
   */
  logs?(deviceId: string, raw: unknown, bytes: number): Promise<{ refused: 'too-large' | 'not-a-batch' | null }>
  /** A status report as the device sent it (battery, its report interval): device health watches them. */
  status?(deviceId: string, report: { battery?: number; interval?: number; firmware?: string }): Promise<void>
  /** Firmware update progress (up/ota), its fields checked; false when it matched no offer of that version. */
  ota?(deviceId: string, report: OtaReport): Promise<boolean>
}

/** The uplink hooks the domains provide (the downlink's are wired by the transports themselves). */
export type DomainUplinkHooks = Pick<UplinkHooks, 'logs' | 'status' | 'ota'>

type Deps = {
  db: Database
  meta: WeakMap<Client, ClientMeta>
  log: { warn: (o: object | string, m?: string) => void }
  queue: (deviceId: string, task: () => Promise<void>) => Promise<void>
  hooks: UplinkHooks
}

function parseJson(buf: Buffer): Record<string, unknown> | null {
  try {
    const v = JSON.parse(buf.toString('utf8'))
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null
  } catch {
    return null
  }
}

const num = (v: unknown, min: number, max: number) => (typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max ? v : undefined)
const text = (v: unknown, max: number) => (typeof v === 'string' && v.length <= max ? v : undefined)
const int = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined)

/** The fields of an acknowledgement that are kept, each bounded; anything else a device adds is dropped. */
function ackRecord(body: Record<string, unknown>): Record<string, unknown> {
  const record: Record<string, unknown> = {
    seq: int(body.seq),
    commandId: text(body.commandId, 100),
    command: text(body.command, 32),
    kind: text(body.kind, 16),
    ok: typeof body.ok === 'boolean' ? body.ok : undefined,
    error: typeof body.error === 'string' ? body.error.slice(0, 500) : undefined,
    version: int(body.version),
    imageId: text(body.imageId, 100),
    promptId: text(body.promptId, 100),
    shownImageId: text(body.shownImageId, 100),
    sha256: text(body.sha256, 64),
    seconds: num(body.seconds, 0, 86_400 * 365),
  }
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined))
}

export type UplinkOutcome = 'applied' | 'invalid' | 'oversized' | 'unmatched'

/**
 * Applies one uplink message of a device; used by the embedded broker and the external-broker
 * client. `payload` is the raw message, checked for size before it is parsed.
 */
export async function applyUplink(
  db: Database,
  deviceId: string,
  kind: string,
  payload: Buffer,
  hooks: UplinkHooks,
): Promise<UplinkOutcome> {
  const max = UPLINK_MAX_BYTES.get(kind)
  if (max === undefined) return 'invalid'
  if (kind === 'log') {
    if (!hooks.logs) return 'invalid'
    let raw: unknown
    try {
      raw = JSON.parse(payload.toString('utf8'))
    } catch {
      raw = undefined
    }
    const { refused } = await hooks.logs(deviceId, raw, payload.length)
    return refused === 'too-large' ? 'oversized' : refused ? 'invalid' : 'applied'
  }
  if (payload.length > max) return 'oversized'
  const body = parseJson(payload)
  if (!body) return 'invalid'
  if (kind === 'status') {
    const report: DeviceReport = {
      battery: num(body.battery, 0, 100),
      firmware: text(body.firmware, 50),
      shownImageId: text(body.shownImageId, 100) ?? null,
      configVersion: num(body.configVersion, 0, 2 ** 31),
      reportedAt: new Date().toISOString(),
    }
    await applyDeviceReport(db, deviceId, JSON.parse(JSON.stringify(report)))
    await hooks.reported?.(deviceId, { configVersion: report.configVersion, shownImageId: report.shownImageId })
    const interval = num(body.interval, 1, 7 * 86_400)
    await hooks.status?.(deviceId, {
      battery: report.battery,
      interval: interval === undefined ? undefined : Math.round(interval),
      firmware: report.firmware,
    })
    if (body.sessionPresent === false) hooks.newSession?.(deviceId)
    return 'applied'
  }
  if (kind === 'ota') {
    const version = text(body.version, 50)
    const state = otaProgressStates.find((s) => s === body.state)
    if (!version || !state || !hooks.ota) return 'invalid'
    const reason = typeof body.reason === 'string' ? body.reason.slice(0, 500) : undefined
    return (await hooks.ota(deviceId, { version, state, reason })) ? 'applied' : 'unmatched'
  }
  const record = ackRecord(body)
  const seq = record.seq as number | undefined
  const commandId = record.commandId as string | undefined
  const [cmd, messageKind] = await Promise.all([
    commandId ? ackCommand(db, deviceId, commandId, record) : undefined,
    seq !== undefined && hooks.delivered ? hooks.delivered(deviceId, seq) : undefined,
  ])
  // An acknowledgement of nothing the service sent is counted, not stored: a device (or whoever
  // holds its secret) cannot fill the event log with made-up ids.
  if (!cmd && !messageKind) return 'unmatched'
  await insertEvent(db, { type: 'device.ack', deviceId, userId: cmd?.userId, data: { ...record, matched: true } })
  return 'applied'
}

/**
 * A database error that is the message's fault, not the database's: a value PostgreSQL refuses
 * (SQLSTATE class 22: U+0000 in text, out of range; 54000, too large to index) or a row deleted
 * meanwhile (23503). Sending the message again cannot help, so it is acknowledged and counted as
 * invalid, as malformed uplink always was; any other failure leaves it unacknowledged.
 */
function refusesMessage(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    const code = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined
    if (code && (code.startsWith('22') || code === '54000' || code === '23503')) return true
  }
  return false
}

export function attachUplink({ db, meta, log, queue, hooks }: Deps) {
  const stats: UplinkStats = { applied: 0, invalid: 0, oversized: 0, unmatchedAcks: 0 }
  const pending = new Set<Promise<void>>()
  /** Connections one of whose messages could not be stored: the rest of what they sent is not applied out of order. */
  const failed = new WeakSet<Client>()
  const count = (outcome: UplinkOutcome) => {
    if (outcome === 'unmatched') stats.unmatchedAcks += 1
    else stats[outcome] += 1
  }

  /**
   * A device's message to one of its own `up/` topics, handled before the broker acknowledges it
   * (device-broker.ts calls this from aedes' authorizePublish, which runs before the PUBACK or
   * PUBREC): resolves once what it carries is stored (batched writes such as up/ack's once their
   * batch is committed), rejects when it could not be, and then the broker must not acknowledge
   * it (the device sends it again, DUP set, when it reconnects). Malformed, oversized and
   * unmatched messages resolve: they are counted, not stored, and acknowledged. Undefined when
   * the packet is not a device's uplink.
   */
  function receive(client: Client, packet: PublishPacket): Promise<void> | undefined {
    const m = meta.get(client)
    if (m?.kind !== 'device') return undefined
    const t = parseDeviceTopic(packet.topic)
    if (!t || t.deviceId !== m.subject || t.rest[0] !== 'up') return undefined
    const deviceId = m.subject
    const kind = t.rest[1] as string
    const payload = packet.payload as Buffer
    // Refused before it waits in the device's queue: the check costs nothing.
    const max = UPLINK_MAX_BYTES.get(kind)
    if (payload.length > (max ?? 0)) {
      count(max === undefined ? 'invalid' : 'oversized')
      return Promise.resolve()
    }
    // The device's queue (presence.ts) keeps its uplink in order, after its connect event; it
    // swallows errors, so the outcome comes back through a promise of our own.
    const task = new Promise<void>((resolve, reject) => {
      void queue(deviceId, async () => {
        if (failed.has(client)) return reject(new Error('an earlier message of this connection could not be stored'))
        try {
          count(await applyUplink(db, deviceId, kind, payload, hooks))
          resolve()
        } catch (err) {
          if (refusesMessage(err)) {
            log.warn({ err, deviceId, kind }, 'the database refused a device message: acknowledged, not stored')
            count('invalid')
            return resolve()
          }
          // A QoS 0 message is never acknowledged nor resent: losing it must not hold up the
          // connection's later messages. Only an unacknowledged QoS 1/2 one ends what follows.
          if (packet.qos > 0) failed.add(client)
          log.warn({ err, deviceId, kind }, 'could not store a device message: not acknowledged, the device sends it again')
          reject(err)
        }
      })
    })
    const tracked = task.then(
      () => {},
      () => {},
    )
    pending.add(tracked)
    void tracked.finally(() => pending.delete(tracked))
    return task
  }

  return {
    stats,
    receive,
    async settled() {
      await Promise.allSettled([...pending])
    },
    log,
  }
}
