// The service's broker: devices authenticate with their secret, apps with a session token;
// topic rules from topics.ts; presence and uplink handled in presence.ts and uplink.ts.
import { randomUUID } from 'node:crypto'
import type { Aedes, Client, PublishPacket } from 'aedes'
import type { Auth } from '../src/auth/auth.js'
import type { Database } from '../src/db/client.js'
import { batchedLookup, checkCredentials, mayPublish, maySubscribe, type DeviceOwner, type Identity } from './credentials.js'
import type { DeviceLink } from '../src/devices/sessions.js'
import { releaseNodeConnections } from '../src/devices/repository.js'
import { insertEvents } from '../src/events/repository.js'
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
  /** A new persistent session: what to send again once the device has subscribed to it. */
  catchUp?: Set<'cmd' | 'image'>
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
  /**
   * A device with a persistent session connected and the broker had no session for it (first
   * connect, or the broker lost it: a restart in single-node mode). The service sends again what
   * the device has not acknowledged.
   */
  onNewSession?: (deviceId: string, kind: 'cmd' | 'image') => void
  /** Cluster mode: how many messages wait in a client's stored queue (Redis persistence). */
  queuedFor?: (clientId: string) => Promise<number>
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

/**
 * Closes a connection the way a clean DISCONNECT would: its will is dropped (and deleted from the
 * persistence) instead of published. For closes the service decides (kick, takeover, shutdown),
 * where presence.ts publishes the right state itself and "connection lost" would be wrong.
 */
function withoutWill(client: Client): void {
  ;(client as unknown as { _disconnected: boolean })._disconnected = true
}

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
  const newConnectionId = () => `${deps.id}/${randomUUID()}`

  if (deps.mq) {
    // Registered before aedes' own handler of the same message, which closes a client that
    // connected again on another instance: ours runs first and names the close a takeover.
    const emitter = deps.mq as { on(topic: string, fn: (p: { topic: string; payload: Buffer }, cb: () => void) => void): void }
    emitter.on('$SYS/+/new/clients', (packet, cb) => {
      const from = packet.topic.split('/')[1]
      const client = current.get(packet.payload.toString('utf8'))
      if (from !== deps.id && client && !client.closed) {
        const m = meta.get(client)
        if (m) m.reason ??= 'takeover'
        withoutWill(client)
      }
      cb()
    })
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
              // Apps watch live state (retained on subscribe); a stored session would keep another
              // user's queued messages under a client id they could reuse.
              if (!client.clean) return refuse(2, 'companion apps connect with a clean session', done)
              const userId = check.identity.userId
              const clients = (aedes as unknown as { clients: Record<string, Client> }).clients
              const holder = clients[client.id]
              if (holder && holder !== client && !holder.closed && meta.get(holder)?.subject !== userId) {
                return refuse(2, 'this client id is in use by another account', done)
              }
              meta.set(client, { kind: 'app', subject: userId, connectionId: newConnectionId() })
              return done(null, true)
            }
            const deviceId = check.identity.deviceId
            const previous = current.get(deviceId)
            if (previous && previous !== client && !previous.closed) {
              const m = meta.get(previous)
              if (m) m.reason ??= 'takeover'
              withoutWill(previous)
            }
            current.set(deviceId, client)
            meta.set(client, { kind: 'device', subject: deviceId, connectionId: newConnectionId(), owner: check.device })
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
  aedes.on('connackSent', (packet, client) => {
    const m = meta.get(client)
    if (m?.kind === 'device' && !client.clean && !(packet as { sessionPresent?: boolean }).sessionPresent) m.catchUp = new Set(['cmd', 'image'])
  })
  // After the SUBACK: a message published now reaches the new subscription.
  aedes.on('subscribe', (subs, client) => {
    const m = meta.get(client)
    if (!m?.catchUp?.size) return
    for (const kind of [...m.catchUp]) {
      const topic = topicFor(m.subject, kind)
      const covered = subs.some((s) => (s.qos as number) !== 128 && (s.topic === topic || s.topic === `devices/${m.subject}/+` || s.topic === `devices/${m.subject}/#`))
      if (!covered) continue
      m.catchUp.delete(kind)
      deps.onNewSession?.(m.subject, kind)
    }
  })

  async function publish(deviceId: string, kind: DownlinkKind, payload: object, opts: { retain?: boolean } = {}) {
    // Caps each offline queue (the in-memory persistence has no cap of its own). Retained
    // messages replace each other and are not queued. With Redis the device may be connected to
    // another instance, so there the persistence's own session-delivery bound applies instead.
    if (!opts.retain && !current.has(deviceId)) {
      if (!deps.mq) {
        const queued = offlineQueued.get(deviceId) ?? 0
        if (queued >= deps.offlineQueueLimit) {
          stats.droppedOffline += 1
          return
        }
        offlineQueued.set(deviceId, queued + 1)
      } else if (deps.queuedFor && (await deps.queuedFor(deviceId)) >= deps.offlineQueueLimit) {
        // In a cluster the stored queue itself is the count: a device connected to another
        // instance has only its unacknowledged messages there.
        stats.droppedOffline += 1
        return
      }
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
    withoutWill(client)
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

  await releaseStaleConnections()

  /**
   * Devices this node still shows connected (it stopped without closing them: a crash) are
   * recorded offline before it accepts connections, and their stored wills from that run are
   * dropped, since the state published here replaces them.
   */
  async function releaseStaleConnections() {
    const at = new Date()
    // One transaction: a device is never shown offline without its disconnect recorded.
    const released = await db.transaction(async (tx) => {
      const rows = await releaseNodeConnections(tx, deps.id, at)
      await insertEvents(
        tx,
        rows.map((d) => ({ type: 'device.disconnected', deviceId: d.id, userId: d.userId, organizationId: d.organizationId, data: { reason: 'server_shutdown', clean: false }, at })),
      )
      return rows
    })
    if (released.length) {
      for (const d of released) await presence.retainedState(d.id, { online: false, since: at.toISOString(), reason: 'server_shutdown' })
      log.warn({ devices: released.length }, 'devices still shown connected through this node from its last run are now offline')
    }
    const persistence = (aedes as unknown as { persistence: unknown }).persistence as { streamWill(brokers: object): AsyncIterable<{ clientId: string; brokerId: string }>; delWill(c: { id: string; brokerId: string }): Promise<unknown> }
    for await (const will of persistence.streamWill({})) {
      if (will.brokerId === deps.id) await persistence.delWill({ id: will.clientId, brokerId: will.brokerId })
    }
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
      for (const client of [...current.values(), ...Object.values((aedes as unknown as { clients: Record<string, Client> }).clients)]) {
        const m = meta.get(client)
        if (m) m.reason ??= 'server_shutdown'
        withoutWill(client)
      }
      // Everything the service asked to publish goes out before the clients are closed.
      await publisher.drain()
      await server.close()
      await presence.settled()
      await uplink.settled()
    },
  }
}
