// Uplink from devices: up/status updates what the device reports (battery, firmware, shown
// image, config version → isSynced); up/ack acknowledges a command or a delivery.
import type { Aedes, Client } from 'aedes'
import type { Database } from '../src/db/client.js'
import { ackCommand, applyDeviceReport } from '../src/devices/repository.js'
import type { DeviceReport } from '../src/devices/tables.js'
import { insertEvent } from '../src/events/repository.js'
import type { ClientMeta } from './device-broker.js'
import { parseDeviceTopic } from './topics.js'

type Deps = {
  aedes: Aedes
  db: Database
  meta: WeakMap<Client, ClientMeta>
  log: { warn: (o: object | string, m?: string) => void }
  queue: (deviceId: string, task: () => Promise<void>) => Promise<void>
}

export function parseJson(buf: Buffer): Record<string, unknown> | null {
  try {
    const v = JSON.parse(buf.toString('utf8'))
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null
  } catch {
    return null
  }
}

const num = (v: unknown, min: number, max: number) => (typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max ? v : undefined)
const text = (v: unknown, max: number) => (typeof v === 'string' && v.length <= max ? v : undefined)

/** Applies one uplink message of a device; used by the embedded broker and the external-broker client. */
export async function applyUplink(db: Database, deviceId: string, kind: string, body: Record<string, unknown>): Promise<void> {
  if (kind === 'status') {
    const report: DeviceReport = {
      battery: num(body.battery, 0, 100),
      firmware: text(body.firmware, 50),
      shownImageId: text(body.shownImageId, 100) ?? null,
      configVersion: num(body.configVersion, 0, 2 ** 31),
      reportedAt: new Date().toISOString(),
    }
    await applyDeviceReport(db, deviceId, JSON.parse(JSON.stringify(report)))
  } else if (kind === 'ack') {
    const commandId = text(body.commandId, 100)
    const cmd = commandId ? await ackCommand(db, deviceId, commandId, body) : undefined
    await insertEvent(db, { type: 'device.ack', deviceId, userId: cmd?.userId, data: { ...body, matched: Boolean(cmd) } })
  }
}

export function attachUplink({ aedes, db, meta, log, queue }: Deps) {
  let invalid = 0
  const pending = new Set<Promise<void>>()

  aedes.on('publish', (packet, client) => {
    if (!client) return
    const m = meta.get(client)
    if (m?.kind !== 'device') return
    const t = parseDeviceTopic(packet.topic)
    if (!t || t.deviceId !== m.subject || t.rest[0] !== 'up') return
    const body = parseJson(packet.payload as Buffer)
    if (!body) {
      invalid += 1
      return
    }
    const deviceId = m.subject
    const kind = t.rest[1] as string
    const task = queue(deviceId, () => applyUplink(db, deviceId, kind, body))
    pending.add(task)
    void task.finally(() => pending.delete(task))
  })

  return {
    get invalid() {
      return invalid
    },
    async settled() {
      await Promise.allSettled([...pending])
    },
    log,
  }
}
