// The embedded broker's side of presence (src/devices/presence.ts): a device's connect and
// disconnect as aedes reports them, with its reason, client id, remote address and connection id;
// the retained devices/{id}/state and devices/{id}/events go out through the broker's publisher.
import type { Aedes, Client, PublishPacket } from 'aedes'
import type { Database } from '../db/client.js'
import { createDevicePresence } from '../devices/presence.js'
import type { ClientMeta } from './client-meta.js'
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
  const retained = (deviceId: string, body: object) =>
    publisher.publish({
      cmd: 'publish',
      topic: topicFor(deviceId, 'state'),
      payload: unpooled(JSON.stringify(body)),
      qos: 1,
      retain: true,
      dup: false,
    } as PublishPacket)

  const announceRecord = (deviceId: string, record: object) =>
    publisher.publish({
      cmd: 'publish',
      topic: topicFor(deviceId, 'events'),
      payload: Buffer.from(JSON.stringify(record)),
      qos: 0,
      retain: false,
      dup: false,
    } as PublishPacket)

  const presence = createDevicePresence({
    db,
    log,
    onPresence,
    live: async (deviceId, { state, event }) => {
      if (state) await retained(deviceId, state)
      if (event) await announceRecord(deviceId, event)
    },
  })

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
    void presence.connected({
      deviceId: m.subject,
      transport: 'mqtt',
      owner: m.owner,
      connectionId: m.connectionId,
      at: new Date(),
      data: { clientId: client.id, connectionId: m.connectionId, remoteAddress: remoteAddress(client) ?? null, cleanSession: client.clean },
    })
  })

  aedes.on('clientDisconnect', (client) => {
    const m = meta.get(client)
    if (m?.kind !== 'device') return
    const reason: DisconnectReason = m.reason ?? (sentDisconnect(client) ? 'client_disconnect' : 'socket_error')
    const stillCurrent = current.get(m.subject) === client
    if (stillCurrent) current.delete(m.subject)
    void presence.disconnected({
      deviceId: m.subject,
      transport: 'mqtt',
      owner: m.owner,
      connectionId: m.connectionId,
      at: new Date(),
      reason,
      // A takeover here, or on another instance (device-broker.ts marks it): online through the newer connection.
      takenOver: !stillCurrent || reason === 'takeover',
      data: { clientId: client.id, connectionId: m.connectionId, remoteAddress: remoteAddress(client) ?? null },
    })
  })

  return {
    queue: presence.queue,
    /** Publishes a device's retained devices/{id}/state. */
    retainedState: (deviceId: string, body: object) => retained(deviceId, body),
    /** Publishes an event record on devices/{id}/events (what apps watching the device see). */
    event: (deviceId: string, record: object) => announceRecord(deviceId, record),
    /** Resolves when every queued presence write has finished. */
    settled: presence.settled,
  }
}
