// The service's broker: devices authenticate with their secret, apps with a session token;
// topic rules from topics.ts; presence and uplink handled in presence.ts and uplink.ts.
import { randomUUID } from 'node:crypto'
import type { Aedes, Client, PublishPacket } from 'aedes'
import type { Auth } from '../src/auth/auth.js'
import type { Database } from '../src/db/client.js'
import { batchedLookup, checkCredentials, mayPublish, maySubscribe, type DeviceOwner, type Identity } from './credentials.js'
import type { DeviceLink } from '../src/devices/sessions.js'
import { Publisher } from './publisher.js'
import { attachPresence, type DisconnectReason, type PresenceChange } from './presence.js'
import { connackError, createMqttServer, type BrokerLimits, type MqttServer } from './server.js'
import { topicFor, type DownlinkKind } from './topics.js'
import { attachUplink } from './uplink.js'

export type ClientMeta = {
  kind: 'device' | 'app'
  /** The device id (devices) or user id (apps). */
  subject: string
  /** Unique per connection: a takeover's late disconnect must not be confused with the new session. */
  connectionId: string
  reason?: DisconnectReason
  /** Devices: the owner their events are attributed to, as read at authentication. */
  owner?: DeviceOwner
}

export type BrokerStats = { droppedPublishes: number; refusedSubscriptions: number; refusedConnections: number; droppedOffline: number }

export type DeviceBroker = DeviceLink & {
  server: MqttServer
  aedes: Aedes
  stats: BrokerStats
  listen(port: number, host?: string): Promise<number>
  listenTls(port: number, host?: string): Promise<number>
  close(): Promise<void>
}

export type DeviceBrokerDeps = {
  id: string
  db: Database
  auth: Auth
  limits: BrokerLimits
  log: { info: (o: object | string, m?: string) => void; warn: (o: object | string, m?: string) => void }
  mq?: unknown
  persistence?: unknown
  /** Messages kept for an offline device before newer ones are dropped. */
  offlineQueueLimit: number
  tls?: { key: Buffer; cert: Buffer }
  /** Real online/offline changes of devices (see presence.ts). */
  onPresence?: (change: PresenceChange) => void
}

/** Where refused publishes go: no filter reaches a $-topic through a wildcard (MQTT-4.7.2-1) and nobody may subscribe to it. */
const DROP_TOPIC = '$drop/refused'
/** Service-internal: asks whichever instance holds a device's session to close it. */
const KICK_TOPIC = '$dps/kick'
/**
 * The same for every device, so one buffer: a small Buffer.from() per connection is a slice of
 * Node's shared 8 KiB pool and kept every pool slab it landed in alive for the session's lifetime
 * (~8 KiB per idle session in the sessions benchmark).
 */
const WILL_PAYLOAD = Buffer.from(JSON.stringify({ online: false, since: null, reason: 'connection_lost' }))

export async function createDeviceBroker(deps: DeviceBrokerDeps): Promise<DeviceBroker> {
  const { db, auth, log } = deps
  const meta = new WeakMap<Client, ClientMeta>()
  /** The live connection of each device, set at authentication, before aedes registers it. */
  const current = new Map<string, Client>()
  const stats: BrokerStats = { droppedPublishes: 0, refusedSubscriptions: 0, refusedConnections: 0, droppedOffline: 0 }
  /** Messages published to each offline device since it was last connected (single-node mode). */
  const offlineQueued = new Map<string, number>()
  const lookup = batchedLookup(db)

  const refuse = (code: 2 | 3 | 4 | 5, message: string, done: (err: ReturnType<typeof connackError>, ok: boolean | null) => void) => {
    stats.refusedConnections += 1
    done(connackError(code, message), false)
  }

  const server = await createMqttServer({
    id: deps.id,
    limits: deps.limits,
    mq: deps.mq,
    persistence: deps.persistence,
    tls: deps.tls,
    onReject: (reason, address) => {
      stats.refusedConnections += 1
      log.warn({ reason, address }, 'mqtt connection refused')
    },
    hooks: {
      authenticate(client, username, password, done) {
        checkCredentials(db, auth, client.id, username, password?.toString('utf8') ?? '', lookup)
          .then((check) => {
            if (!check.ok) return refuse(check.returnCode, check.reason, done)
            if (check.identity.kind === 'app') {
              meta.set(client, { kind: 'app', subject: check.identity.userId, connectionId: randomUUID() })
              return done(null, true)
            }
            const deviceId = check.identity.deviceId
            const previous = current.get(deviceId)
            if (previous && previous !== client && !previous.closed) {
              const m = meta.get(previous)
              if (m) m.reason ??= 'takeover'
            }
            current.set(deviceId, client)
            meta.set(client, { kind: 'device', subject: deviceId, connectionId: randomUUID(), owner: check.device })
            // The broker sets the will: a device that drops off is shown offline to everyone.
            ;(client as unknown as { _will: unknown })._will = {
              cmd: 'publish',
              topic: topicFor(deviceId, 'state'),
              payload: WILL_PAYLOAD,
              qos: 1,
              retain: true,
            }
            done(null, true)
          })
          .catch(() => refuse(3, 'server unavailable', done))
      },

      authorizePublish(client, packet, done) {
        // A stored will published after a restart has no client; it was authorized when stored.
        if (!client) return done(null)
        const m = meta.get(client)
        const own = m?.kind === 'device' && ((client as unknown as { will?: unknown }).will === packet || mayPublish({ kind: 'device', deviceId: m.subject }, packet.topic))
        if (!own) {
          // MQTT 3.1.1 has no negative PUBACK: accept it on the wire, deliver it to nobody, count it.
          stats.droppedPublishes += 1
          packet.topic = DROP_TOPIC
          packet.retain = false
        }
        done(null)
      },

      authorizeSubscribe(client, sub, done) {
        const m = meta.get(client)
        const deny = () => {
          stats.refusedSubscriptions += 1
          done(null, null)
        }
        if (!m) return deny()
        const identity: Identity = m.kind === 'device' ? { kind: 'device', deviceId: m.subject } : { kind: 'app', userId: m.subject }
        maySubscribe(db, identity, sub.topic)
          .then((ok) => (ok ? done(null, sub) : deny()))
          .catch(deny)
      },
    },
  })

  const { aedes } = server
  const publisher = new Publisher(aedes, 512)
  const presence = attachPresence({ aedes, db, meta, current, publisher, remoteAddress: server.remoteAddress, log, onPresence: deps.onPresence })
  const uplink = attachUplink({ aedes, db, meta, log, queue: presence.queue })

  aedes.on('clientReady', (client) => {
    const m = meta.get(client)
    if (m?.kind === 'device') offlineQueued.delete(m.subject)
  })

  async function publish(deviceId: string, kind: DownlinkKind, payload: object, opts: { retain?: boolean } = {}) {
    // Caps each offline queue (the in-memory persistence has no cap of its own). Retained
    // messages replace each other and are not queued. With Redis the device may be connected to
    // another instance, so there the persistence's own session-delivery bound applies instead.
    if (!deps.mq && !opts.retain && !current.has(deviceId)) {
      const queued = offlineQueued.get(deviceId) ?? 0
      if (queued >= deps.offlineQueueLimit) {
        stats.droppedOffline += 1
        return
      }
      offlineQueued.set(deviceId, queued + 1)
    }
    await publisher.publish({
      cmd: 'publish',
      topic: topicFor(deviceId, kind),
      payload: Buffer.from(JSON.stringify(payload)),
      qos: 1,
      retain: opts.retain ?? false,
      dup: false,
    } as PublishPacket)
  }

  async function kickLocal(deviceId: string, reason: DisconnectReason) {
    const client = current.get(deviceId)
    if (!client || client.closed) return false
    const m = meta.get(client)
    if (m) m.reason = reason
    await new Promise<void>((resolve) => client.close(() => resolve()))
    // The disconnect's event is stored before the caller goes on (a delete must not race it).
    await presence.queue(deviceId, async () => {})
    return true
  }

  // In a cluster the device may be connected to another instance: every instance listens on
  // the shared emitter and closes the session if it holds it.
  const mq = (aedes as unknown as { mq: { on(topic: string, fn: (p: { payload: Buffer }, cb: () => void) => void): void } }).mq
  mq.on(KICK_TOPIC, (packet, cb) => {
    void kickLocal(packet.payload.toString('utf8'), 'kicked')
    cb()
  })

  async function kick(deviceId: string, reason: DisconnectReason = 'kicked') {
    if (await kickLocal(deviceId, reason)) return true
    if (deps.mq) await publisher.publish({ cmd: 'publish', topic: KICK_TOPIC, payload: Buffer.from(deviceId), qos: 0, retain: false, dup: false } as PublishPacket)
    return false
  }

  return {
    server,
    aedes,
    stats,
    publish,
    kick: (id: string, reason?: string) => kick(id, (reason as DisconnectReason) ?? 'kicked'),
    listen: (port: number, host?: string) => server.listenTcp(port, host),
    listenTls: (port: number, host?: string) => server.listenTls(port, host),
    async close() {
      for (const client of current.values()) {
        const m = meta.get(client)
        if (m) m.reason ??= 'server_shutdown'
      }
      for (const client of Object.values((aedes as unknown as { clients: Record<string, Client> }).clients)) {
        const m = meta.get(client)
        if (m) m.reason ??= 'server_shutdown'
      }
      // Everything the service asked to publish goes out before the clients are closed.
      await publisher.drain()
      await server.close()
      await presence.settled()
      await uplink.settled()
    },
  }
}
