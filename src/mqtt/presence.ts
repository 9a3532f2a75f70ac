// Presence: every connect and disconnect of a device is an Event, with its reason, client id,
// remote address and connection id; isActive and last_seen_at follow; the retained
// devices/{id}/state carries {online, since}. Writes for one device run in order.
import type { Aedes, Client, PublishPacket } from 'aedes'
import type { Database } from '../db/client.js'
import { toEventRecord } from '../events/records.js'
import type { ClientMeta } from './client-meta.js'
import { createPresenceStore } from './presence-store.js'
import { sentDisconnect } from '../../broker/aedes-internals.js'
import type { Publisher } from '../../broker/publisher.js'
import { topicFor, type DisconnectReason, type PresenceChange } from './contract.js'

type Deps = {
  aedes: Aedes
  db: Database
  meta: WeakMap<Client, ClientMeta>
  current: Map<string, Client>
  publisher: Publisher
  remoteAddress: (c: Client) => string | undefined
  log: { warn: (o: object | string, m?: string) => void }
  /** Called (not awaited) on real online/offline changes, e.g. to notify the owner. */
  onPresence?: (change: PresenceChange) => void
}

/**
 * Bytes of a retained message, kept by the broker as long as the device exists: in a buffer of
 * their own, since a small Buffer.from() is a slice of Node's shared 8 KiB pool and would keep a
 * whole slab alive per device (measured by the sessions benchmark).
 */
function unpooled(text: string): Buffer {
  const buf = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
  buf.write(text)
  return buf
}

export function attachPresence({ aedes, db, meta, current, publisher, remoteAddress, log, onPresence }: Deps) {
  const chains = new Map<string, Promise<void>>()
  const store = createPresenceStore(db)

  /** Runs `task` after every earlier task of the same device. */
  function queue(deviceId: string, task: () => Promise<void>): Promise<void> {
    const prev = chains.get(deviceId) ?? Promise.resolve()
    const next = prev.then(task).catch((err) => log.warn({ err, deviceId }, 'presence update failed'))
    chains.set(deviceId, next)
    void next.then(() => {
      if (chains.get(deviceId) === next) chains.delete(deviceId)
    })
    return next
  }

  const retained = (deviceId: string, body: object) =>
    publisher.publish({
      cmd: 'publish',
      topic: topicFor(deviceId, 'state'),
      payload: unpooled(JSON.stringify(body)),
      qos: 1,
      retain: true,
      dup: false,
    } as PublishPacket)

  const announce = (deviceId: string, row: Parameters<typeof toEventRecord>[0]) => announceRecord(deviceId, toEventRecord(row))
  const announceRecord = (deviceId: string, record: object) =>
    publisher.publish({
      cmd: 'publish',
      topic: topicFor(deviceId, 'events'),
      payload: Buffer.from(JSON.stringify(record)),
      qos: 0,
      retain: false,
      dup: false,
    } as PublishPacket)

  aedes.on('keepaliveTimeout', (client) => {
    const m = meta.get(client)
    if (m) m.reason ??= 'keepalive_timeout'
  })
  aedes.on('clientError', (client) => {
    const m = meta.get(client)
    if (m) m.reason ??= 'socket_error'
  })

  aedes.on('clientReady', (client) => {
    const m = meta.get(client)
    if (m?.kind !== 'device') return
    const at = new Date()
    const data = {
      clientId: client.id,
      connectionId: m.connectionId,
      remoteAddress: remoteAddress(client) ?? null,
      cleanSession: client.clean,
    }
    void queue(m.subject, async () => {
      // The previous event is only needed when someone listens: was the device offline, and not just restarted with the service?
      const { event, device, previous } = await store.write({
        type: 'device.connected',
        deviceId: m.subject,
        owner: m.owner,
        data,
        at,
        connectionId: m.connectionId,
        setActive: true,
        previousWhenInactive: Boolean(onPresence),
      })
      const afterShutdown = previous?.type === 'device.disconnected' && previous.data.reason === 'server_shutdown'
      if (device && !device.wasActive && !afterShutdown)
        onPresence?.({ deviceId: device.id, deviceName: device.name, userId: device.userId, online: true, at })
      await retained(m.subject, { online: true, since: at.toISOString() })
      if (event) await announce(m.subject, event)
    })
  })

  aedes.on('clientDisconnect', (client) => {
    const m = meta.get(client)
    if (m?.kind !== 'device') return
    const at = new Date()
    const reason: DisconnectReason = m.reason ?? (sentDisconnect(client) ? 'client_disconnect' : 'socket_error')
    const stillCurrent = current.get(m.subject) === client
    if (stillCurrent) current.delete(m.subject)
    // A takeover here, or on another instance (device-broker.ts marks it): online through the newer connection.
    const takenOver = !stillCurrent || reason === 'takeover'
    const data = { reason, clientId: client.id, connectionId: m.connectionId, remoteAddress: remoteAddress(client) ?? null }
    void queue(m.subject, async () => {
      // Otherwise offline, unless the database shows a newer connection got there first.
      const { event, device, superseded } = await store.write({
        type: 'device.disconnected',
        deviceId: m.subject,
        owner: m.owner,
        data,
        at,
        connectionId: m.connectionId,
        setActive: takenOver ? undefined : false,
      })
      const offline = !takenOver && !superseded
      if (offline && device && reason !== 'server_shutdown')
        onPresence?.({ deviceId: device.id, deviceName: device.name, userId: device.userId, online: false, reason, at })
      if (offline && reason !== 'server_shutdown') await retained(m.subject, { online: false, since: at.toISOString(), reason })
      if (reason !== 'server_shutdown' && event) await announce(m.subject, event)
    })
  })

  return {
    queue,
    /** Publishes a device's retained devices/{id}/state. */
    retainedState: (deviceId: string, body: object) => retained(deviceId, body),
    /** Publishes an event record on devices/{id}/events (what apps watching the device see). */
    event: (deviceId: string, record: object) => announceRecord(deviceId, record),
    /** Resolves when every queued presence write has finished. */
    async settled() {
      while (chains.size) await Promise.allSettled([...chains.values()])
    },
  }
}
