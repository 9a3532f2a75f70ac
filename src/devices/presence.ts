// Presence of every device, whatever reaches it: a connect, a disconnect (or a polling device
// overdue) and a poll that finds it offline are each an Event naming its transport, isActive and
// last_seen_at follow, the owner is told of real changes, and apps watching the device get its
// retained devices/{id}/state and the event on devices/{id}/events. The transports are adapters
// that say when (src/mqtt/presence.ts for the embedded broker, src/mqtt/rabbitmq-presence.ts for
// RabbitMQ's event exchange, the TRMNL poll and sweep) and how the live state is published.
// Writes of one device run in order; writes of devices changing at the same time share one
// statement (presence-store.ts).
import type { Database } from '../db/client.js'
import { toEventRecord } from '../events/records.js'
import type { DisconnectReason, PresenceChange } from '../mqtt/contract.js'
import { createPresenceStore, type DeviceOwner } from './presence-store.js'
import type { PresenceState } from './sessions.js'

/** How a device reaches the service: MQTT on the embedded broker, MQTT on RabbitMQ, or HTTP polls (TRMNL). */
export type PresenceTransport = 'mqtt' | 'rabbitmq' | 'http'

/** Publishes what apps watching a device see live: its retained state and/or an event record. */
export type LiveSink = (deviceId: string, live: { state?: PresenceState; event?: object }) => Promise<void>

type Common = {
  deviceId: string
  transport: PresenceTransport
  /** Who the event is attributed to (read when the device authenticated); the device row's owner otherwise. */
  owner?: DeviceOwner
  /** What the event says besides its transport (and a disconnect's reason). */
  data: Record<string, unknown>
  at: Date
}

export type Connected = Common & { connectionId: string }

export type Disconnected = Common & {
  /** The connection that ended; absent for a polling device. */
  connectionId?: string
  reason: DisconnectReason
  /** A newer connection of the device took over: it stays online. */
  takenOver?: boolean
  /** A polling device found overdue: offline only if it is still active and was last seen no later than this. */
  seenBefore?: Date
}

/** A poll: the device is seen; it is a connect only when it was offline. */
export type Seen = Common

export function createDevicePresence(deps: {
  db: Database
  live: LiveSink
  log: { warn: (o: object, m: string) => void }
  /** Called (not awaited) on real online/offline changes, e.g. to notify the owner. */
  onPresence?: (change: PresenceChange) => void
}) {
  const { live, log, onPresence } = deps
  const chains = new Map<string, Promise<void>>()
  const store = createPresenceStore(deps.db)

  /** Runs `task` after every earlier task of the same device: a connect is written before its close. */
  function queue<T>(deviceId: string, task: () => Promise<T>): Promise<T | undefined> {
    const prev = chains.get(deviceId) ?? Promise.resolve()
    const next = prev.then(task).catch((err: unknown) => {
      log.warn({ err, deviceId }, 'presence update failed')
      return undefined
    })
    const done = next.then(() => {})
    chains.set(deviceId, done)
    void done.then(() => {
      if (chains.get(deviceId) === done) chains.delete(deviceId)
    })
    return next
  }

  /**
   * A polling device's live state is not awaited: an external broker that is away holds a QoS 1
   * publish until it is back, and neither the poll nor the sweep may wait for it. A broker
   * connection's is, so a device's states go out in the order they happened.
   */
  function publish(transport: PresenceTransport, deviceId: string, body: { state?: PresenceState; event?: object }) {
    const sent = live(deviceId, body)
    if (transport !== 'http') return sent
    sent.catch((err: unknown) => log.warn({ err, deviceId }, 'could not publish a device’s live state'))
    return Promise.resolve()
  }

  /** Online; with `polled`, only a device that was offline is news (every poll is seen, few are connects). Answers whether it was a connect. */
  async function online(c: Common & { connectionId?: string }, polled: boolean): Promise<boolean> {
    // The previous event is only needed when someone listens: was the device offline, and not just restarted with the service?
    const { event, device, previous } = await store.write({
      type: 'device.connected',
      deviceId: c.deviceId,
      owner: c.owner,
      data: { ...c.data, transport: c.transport },
      at: c.at,
      connectionId: c.connectionId ?? null,
      setActive: true,
      previousWhenInactive: Boolean(onPresence) && !polled,
      whenInactive: polled,
    })
    if (polled && !event) return false
    const afterShutdown = previous?.type === 'device.disconnected' && previous.data.reason === 'server_shutdown'
    if (device && !device.wasActive && !afterShutdown)
      onPresence?.({ deviceId: device.id, deviceName: device.name, userId: device.userId, online: true, at: c.at })
    await publish(c.transport, c.deviceId, { state: { online: true, since: c.at.toISOString() }, event: event && toEventRecord(event) })
    return true
  }

  /** Offline, unless a takeover keeps it online or the database shows a newer connection (or poll) got there first. Answers whether it went offline. */
  async function offline(d: Disconnected): Promise<boolean> {
    const { event, device, superseded } = await store.write({
      type: 'device.disconnected',
      deviceId: d.deviceId,
      owner: d.owner,
      data: { reason: d.reason, ...d.data, transport: d.transport },
      at: d.at,
      connectionId: d.connectionId ?? null,
      setActive: d.takenOver ? undefined : false,
      seenBefore: d.seenBefore,
    })
    const wentOffline = !d.takenOver && !superseded
    // A shutdown is not news: the device's state stays as it was until it is back.
    const quiet = d.reason === 'server_shutdown'
    if (wentOffline && device && !quiet)
      onPresence?.({ deviceId: device.id, deviceName: device.name, userId: device.userId, online: false, reason: d.reason, at: d.at })
    const state = wentOffline && !quiet ? { online: false, since: d.at.toISOString(), reason: d.reason } : undefined
    const record = !quiet && event ? toEventRecord(event) : undefined
    if (state || record) await publish(d.transport, d.deviceId, { state, event: record })
    return wentOffline
  }

  return {
    queue,
    /** Unqueued, for an adapter that decides inside its own queued task. */
    write: { connected: (c: Connected) => online(c, false), disconnected: offline },
    connected: (c: Connected) => queue(c.deviceId, () => online(c, false)),
    disconnected: (d: Disconnected) => queue(d.deviceId, () => offline(d)),
    /** A poll: resolves (true when it was a connect) once written; its live state goes out without being awaited. */
    seen: (s: Seen) => queue(s.deviceId, () => online(s, true)),
    /** Resolves when every queued presence write has finished. */
    async settled() {
      while (chains.size) await Promise.allSettled([...chains.values()])
    },
  }
}
