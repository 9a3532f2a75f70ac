// The service's broker: devices authenticate with their secret, apps with a session token;
// topic rules from contract.ts; presence and uplink handled in presence.ts and uplink.ts.
import { randomBytes, randomUUID } from 'node:crypto'
import type { Aedes, Client, PublishPacket } from 'aedes'
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { batchedAccessCheck, batchedLookup, checkCredentials, mayPublish, maySubscribe, type Identity } from './credentials.js'
import { appSubscriptionTarget, deviceMaySubscribe } from './topic-rules.js'
import type { DeviceLink, PresenceState } from '../devices/sessions.js'
import { resentCount, resentHas, resentWith, type ClientMeta } from './client-meta.js'
import type { DownlinkHooks } from './downlink-hooks.js'
import { nodesHoldingDevices, releaseNodeConnections, visiblePairs } from '../devices/repository.js'
import { insertEvents } from '../events/repository.js'
import { liveSessionIds } from '../auth/users-repository.js'
import {
  activeWill,
  connectedClients,
  dropWillOnClose,
  emitterOf,
  onClientRegistered,
  pendingWill,
  sessionStore,
  setPendingWill,
  subscriptionsOf,
  type Emitter,
  type StoredPacket,
} from '../../broker/aedes-internals.js'
import { Publisher } from '../../broker/publisher.js'
import type { RetainedTree } from '../../broker/retained.js'
import { attachPresence } from './presence.js'
import { connackError, createMqttServer, DROP_TOPIC, type BrokerLimits, type MqttServer } from '../../broker/server.js'
import {
  deviceFilter,
  downlinkKinds,
  parseDeviceTopic,
  replacingKinds,
  topicFor,
  type DisconnectReason,
  type DownlinkKind,
  type PresenceChange,
} from './contract.js'
import { attachUplink, type DomainUplinkHooks, type UplinkStats } from './uplink.js'

type BrokerStats = { droppedPublishes: number; refusedSubscriptions: number; refusedConnections: number; droppedOffline: number }

export type DeviceBroker = DeviceLink & {
  server: MqttServer
  aedes: Aedes
  stats: BrokerStats
  /** What devices sent: applied, refused as invalid or too large, acknowledgements of nothing. */
  uplinkStats: UplinkStats
  listen(port: number, host?: string): Promise<number>
  listenTls(port: number, host?: string): Promise<number>
  /**
   * Ends the connections of companion apps whose session no longer acts for anyone (signed out,
   * revoked, expired, user banned or deleted), or that hold a subscription to a device their user
   * may no longer see (removed from or left its organization, the organization deleted, the device
   * deleted): called after every account change, on every instance. Resolves with how many were closed.
   */
  revalidateApps(): Promise<number>
  /** revalidateApps on every instance of the cluster (this one included): after a device is deleted. */
  revalidateAppsEverywhere(): Promise<void>
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
   * The durable downlink (src/downlink/outbox.ts). `resend`: a device's session can receive
   * downlink kinds it could not before (it subscribed, or a resumed session is ready), so the
   * service sends what the device has not acknowledged of those kinds, except the seqs the broker
   * still holds for it and will resend itself. `delivered`: the device acknowledged (PUBACK or
   * up/ack) a numbered message. `seqOf` reads the seq a message's payload carries.
   */
  downlink?: DownlinkHooks & { seqOf(payload: Buffer): number | undefined }
  /** Cluster mode: how often nodes heartbeat (ms); a node silent for three intervals is dead. */
  heartbeatMs?: number
  /** Origins whose pages may connect over WebSocket with the session cookie instead of a token (the console's). */
  webOrigins?: readonly string[]
  /** Cluster mode: how many messages wait in a client's stored queue (Redis persistence). */
  queuedFor?: (clientId: string) => Promise<number>
  /** What the domains do with uplink: log batches, status reports. */
  uplink?: DomainUplinkHooks
}

/** Service-internal: asks whichever instance holds a device's session to close it. */
const KICK_TOPIC = '$dps/kick'
/** Service-internal: asks every instance to check what its companion apps may still watch. */
const REVALIDATE_TOPIC = '$dps/revalidate-apps'
/** Subscriptions checked per query (each is one row of a VALUES list). */
const ACCESS_BATCH = 500
/** How long after a SUBSCRIBE the resend waits for the device's next SUBSCRIBE (devices subscribe topic by topic). */
const SUBSCRIBE_SETTLE_MS = 100
/**
 * The same for every device, so one buffer: a small Buffer.from() per connection is a slice of
 * Node's shared 8 KiB pool and kept every pool slab it landed in alive for the session's lifetime
 * (~8 KiB per idle session in the sessions benchmark).
 */
const WILL_PAYLOAD = Buffer.from(JSON.stringify({ online: false, since: null, reason: 'connection_lost' }))

/** The will the broker sets for every device (see authenticate): retained offline state on the device's own state topic. */
function isDeviceWill(packet: PublishPacket): boolean {
  const t = parseDeviceTopic(packet.topic)
  const payload = packet.payload
  return Boolean(
    t && t.rest.length === 1 && t.rest[0] === 'state' && packet.retain && Buffer.isBuffer(payload) && payload.equals(WILL_PAYLOAD),
  )
}

/**
 * Closes a connection the way a clean DISCONNECT would: its will is dropped (and deleted from the
 * persistence) instead of published. For closes the service decides (kick, takeover, shutdown),
 * where presence.ts publishes the right state itself and "connection lost" would be wrong.
 */
function withoutWill(client: Client): void {
  dropWillOnClose(client)
}

export async function createDeviceBroker(deps: DeviceBrokerDeps): Promise<DeviceBroker> {
  const { db, auth, log, downlink } = deps
  const meta = new WeakMap<Client, ClientMeta>()
  /** The live connection of each device, set at authentication, before aedes registers it. */
  const current = new Map<string, Client>()
  const stats: BrokerStats = { droppedPublishes: 0, refusedSubscriptions: 0, refusedConnections: 0, droppedOffline: 0 }
  /** Messages published to each offline device since it was last connected (single-node mode). */
  const offlineQueued = new Map<string, number>()
  const lookup = batchedLookup(db)
  const canSee = batchedAccessCheck(db)

  const refuse = (code: 2 | 3 | 4 | 5, message: string, done: (err: ReturnType<typeof connackError>, ok: boolean | null) => void) => {
    stats.refusedConnections += 1
    done(connackError(code, message), false)
  }
  /**
   * This process's broker id. aedes numbers the packets it stores from 1 in every process, and the
   * Redis persistence keys a stored packet by broker id and number: a restarted node under its
   * fixed id overwrote the packets its last run had queued for sleeping devices, and a device was
   * handed another device's messages. Each run is a broker of its own, `<node>~<run>`; the node id
   * (MQTT_BROKER_ID, which cannot contain `~`) finds this node's connections and wills of earlier runs.
   */
  const instance = `${deps.id}~${randomBytes(6).toString('hex')}`
  const nodeOf = (brokerId: string) => brokerId.split('~')[0]
  const newConnectionId = () => `${instance}/${randomUUID()}`

  if (deps.mq) {
    // Registered before aedes' own handler of the same message, which closes a client that
    // connected again on another instance: ours runs first and names the close a takeover.
    onClientRegistered(deps.mq as Emitter, (from, clientId) => {
      const client = current.get(clientId)
      if (from !== instance && client && !client.closed) {
        const m = meta.get(client)
        if (m) m.reason ??= 'takeover'
        withoutWill(client)
      }
    })
  }

  const server = await createMqttServer({
    id: instance,
    limits: deps.limits,
    mq: deps.mq,
    persistence: deps.persistence,
    tls: deps.tls,
    heartbeatMs: deps.heartbeatMs,
    onError: (err) => log.warn({ err }, 'MQTT broker: its store failed (the broker keeps serving)'),
    storedQueue: {
      // A device waking into its stored session gets the newest config, image and firmware offer
      // queued for it, not the ones they replaced (the outbox superseded those too).
      lastValue: (topic) => {
        const t = parseDeviceTopic(topic)
        return t !== null && t.rest.length === 1 && replacingKinds.has(t.rest[0]!)
      },
      // A queue without its session (Redis lost it): the outbox resends what is pending, in order.
      dropStored: (client) => {
        const m = meta.get(client)
        return m?.kind === 'device' && m.session?.resumed === false
      },
    },
    onReject: (reason, address) => {
      stats.refusedConnections += 1
      log.warn({ reason, address }, 'mqtt connection refused')
    },
    hooks: {
      authenticate(client, username, password, done) {
        // MQTT over WebSocket: the upgrade request (aedes keeps it as client.req).
        const req = client.req
        const browser = req ? { cookie: req.headers.cookie, origin: req.headers.origin, allowedOrigins: deps.webOrigins ?? [] } : undefined
        checkCredentials(db, auth, client.id, username, password?.toString('utf8') ?? '', lookup, browser)
          .then((check) => {
            if (!check.ok) return refuse(check.returnCode, check.reason, done)
            if (check.identity.kind === 'app') {
              // Apps watch live state (retained on subscribe); a stored session would keep another
              // user's queued messages under a client id they could reuse.
              if (!client.clean) return refuse(2, 'companion apps connect with a clean session', done)
              // A will is published without its client (by another node, when this one dies), past
              // the topic rules a live app is held to: apps, which only watch, may not set one.
              if (pendingWill(client)) return refuse(5, 'companion apps may not set a last will', done)
              const userId = check.identity.userId
              const holder = connectedClients(aedes)[client.id]
              if (holder && holder !== client && !holder.closed && meta.get(holder)?.subject !== userId) {
                return refuse(2, 'this client id is in use by another account', done)
              }
              meta.set(client, { kind: 'app', subject: userId, connectionId: newConnectionId(), sessionId: check.session?.id })
              return done(null, true)
            }
            // The client id is the device id (checkCredentials): one string for both, not a copy from the database row.
            const deviceId = check.identity.deviceId === client.id ? client.id : check.identity.deviceId
            const previous = current.get(deviceId)
            if (previous && previous !== client && !previous.closed) {
              const m = meta.get(previous)
              if (m) m.reason ??= 'takeover'
              withoutWill(previous)
            }
            current.set(deviceId, client)
            // Every field set now (same shape for all, none added later): no separate property store per client.
            meta.set(client, {
              kind: 'device',
              subject: deviceId,
              connectionId: newConnectionId(),
              reason: undefined,
              owner: check.device,
              sessionId: undefined,
              session: undefined,
            })
            // The broker sets the will: a device that drops off is shown offline to everyone.
            setPendingWill(client, {
              cmd: 'publish',
              topic: topicFor(deviceId, 'state'),
              payload: WILL_PAYLOAD,
              qos: 1,
              retain: true,
            } as PublishPacket)
            done(null, true)
          })
          .catch(() => refuse(3, 'server unavailable', done))
      },

      authorizePublish(client, packet, done) {
        const m = client && meta.get(client)
        // A stored will published without its client (its node died, or this one restarted): only
        // the will this broker sets for devices may go out, whatever else persistence holds.
        const own = client
          ? m?.kind === 'device' && (activeWill(client) === packet || mayPublish({ kind: 'device', deviceId: m.subject }, packet.topic))
          : isDeviceWill(packet)
        if (!own) {
          // MQTT 3.1.1 has no negative PUBACK: accept it on the wire, deliver it to nobody, count it.
          stats.droppedPublishes += 1
          packet.topic = DROP_TOPIC
          packet.retain = false
          return done(null)
        }
        // A device's own uplink is stored before aedes acknowledges it (PUBACK, or PUBREC for
        // QoS 2, both sent after this callback): the acknowledgement means "stored", so a crash
        // right after it loses nothing. One that could not be stored is refused with an error,
        // which closes the connection unacknowledged; the device sends it again when it reconnects.
        if (client && packet.qos === 2 && packet.dup) {
          // A QoS 2 repeat whose first copy aedes holds awaiting PUBREL was stored already: aedes
          // answers it with PUBREC again and publishes it no second time.
          sessionStore(aedes)
            .incomingGetPacket(client, packet)
            .then(
              () => done(null),
              () => storeUplink(client, packet, done),
            )
          return
        }
        storeUplink(client, packet, done)
      },

      // A device's wildcard (devices/{own}/#) also matches topics it may not subscribe to by name
      // (its events, its own uplink): each message is checked on delivery, as Mosquitto does.
      // Apps subscribe by exact name only (appSubscriptionTarget).
      authorizeForward(client, packet) {
        const m = meta.get(client)
        return m?.kind !== 'device' || deviceMaySubscribe(m.subject, packet.topic) ? packet : null
      },

      authorizeSubscribe(client, sub, done) {
        const m = meta.get(client)
        const deny = () => {
          stats.refusedSubscriptions += 1
          done(null, null)
        }
        if (!m) return deny()
        const identity: Identity = m.kind === 'device' ? { kind: 'device', deviceId: m.subject } : { kind: 'app', userId: m.subject }
        maySubscribe(identity, sub.topic, canSee)
          .then((ok) => (ok ? done(null, sub) : deny()))
          .catch(deny)
      },
    },
  })

  const { aedes } = server

  /** authorizePublish's answer for a device's message allowed on its topic: once its uplink, if it is one, is stored. */
  function storeUplink(client: Client | null, packet: PublishPacket, done: (err: Error | null) => void) {
    const stored = client ? uplink.receive(client, packet) : undefined
    if (!stored) return done(null)
    // QoS 0 promises nothing: it is not held up.
    if (packet.qos === 0) {
      stored.catch(() => {})
      return done(null)
    }
    stored.then(
      () => done(null),
      (err: Error) => done(err),
    )
  }
  const publisher = new Publisher(aedes, 512)
  const presence = attachPresence({
    aedes,
    db,
    meta,
    current,
    publisher,
    remoteAddress: server.remoteAddress,
    log,
    onPresence: deps.onPresence,
  })
  const uplink = attachUplink({
    db,
    meta,
    log,
    queue: presence.queue,
    hooks: { delivered: downlink?.delivered, reported: downlink?.reported, ...deps.uplink },
  })

  aedes.on('connackSent', (packet, client) => {
    const m = meta.get(client)
    if (m?.kind === 'device')
      m.session = { resumed: Boolean((packet as { sessionPresent?: boolean }).sessionPresent), resent: 0, timer: undefined, maxAcked: 0 }
  })
  aedes.on('clientReady', (client) => {
    const m = meta.get(client)
    if (m?.kind !== 'device') return
    offlineQueued.delete(m.subject)
    // A resumed session has its subscriptions back and its stored queue flushed by now.
    if (m.session?.resumed) readyForDownlink(client, m, 0)
  })
  // After the SUBACK: a message published now reaches the new subscription. A device subscribes
  // to its topics one after another; waiting a moment lets the resend cover them all, in order.
  aedes.on('subscribe', (_subs, client) => {
    const m = meta.get(client)
    if (m?.kind === 'device' && m.session) readyForDownlink(client, m, SUBSCRIBE_SETTLE_MS)
  })
  aedes.on('ack', (packet, client) => {
    const m = client && meta.get(client)
    const payload = (packet as PublishPacket | undefined)?.payload
    if (m?.kind !== 'device' || !payload || !downlink) return
    const seq = downlink.seqOf(payload as Buffer)
    if (seq === undefined || parseDeviceTopic((packet as PublishPacket).topic)?.deviceId !== m.subject) return
    // A retained message (config, firmware offer) is published past the offline cap, so it does not mark how far the queue reached.
    if (m.session && seq > m.session.maxAcked && !isRetainedKind(m.subject, (packet as PublishPacket).topic)) m.session.maxAcked = seq
    downlink.delivered(m.subject, seq).catch((err) => log.warn({ err, deviceId: m.subject, seq }, 'could not record a delivery'))
  })

  /** Kinds the service publishes retained: the newest replaces the last, and every SUBSCRIBE gets it. */
  const retainedKinds = ['config', 'ota'] as const
  const isRetainedKind = (deviceId: string, topic: string | undefined) => retainedKinds.some((k) => topic === topicFor(deviceId, k))

  /** The downlink kinds this connection's subscriptions reach. */
  function subscribedKinds(client: Client, deviceId: string): Set<DownlinkKind> {
    const filters = Object.keys(subscriptionsOf(client))
    const wide = filters.includes(deviceFilter(deviceId, '+')) || filters.includes(deviceFilter(deviceId, '#'))
    return new Set(downlinkKinds.filter((k) => wide || filters.includes(topicFor(deviceId, k))))
  }

  function readyForDownlink(client: Client, m: ClientMeta, settleMs: number) {
    const session = m.session
    if (!session || !downlink) return
    clearTimeout(session.timer)
    const fresh = [...subscribedKinds(client, m.subject)].filter((k) => !resentHas(session.resent, k))
    if (!fresh.length) return
    // From the SUBACK on, a live publish reaches the device: the resend must not send it again.
    downlink.expectResend(m.subject, true)
    const run = () => {
      session.timer = undefined
      if (client.closed) {
        downlink.expectResend(m.subject, false)
        return
      }
      const kinds = new Set([...subscribedKinds(client, m.subject)].filter((k) => !resentHas(session.resent, k)))
      session.resent = resentWith(session.resent, kinds)
      // Nothing pending for the device (known in memory, see src/downlink/pending-index.ts): its
      // stored queue is not read and the database not asked, most of a reconnecting fleet.
      if (!kinds.size || downlink.mayHavePending?.(m.subject) === false) {
        downlink.expectResend(m.subject, false)
        return
      }
      storedSeqs(client, m.subject)
        .then(({ holding, queuedUpTo }) => {
          // A resumed session: the broker queued what was published while the device was away
          // and is resending it (oldest first); it may have been acknowledged already. What the
          // service still has to send comes after the newest of those.
          const after = session.resumed ? Math.max(session.maxAcked, queuedUpTo) : undefined
          return downlink.resend(m.subject, { kinds, holding, after })
        })
        .catch((err) => {
          downlink.expectResend(m.subject, false)
          log.warn({ err, deviceId: m.subject }, 'could not send a device what it missed')
        })
    }
    // Every kind there is: no reason to wait for more.
    if (settleMs === 0 || fresh.length + resentCount(session.resent) === downlinkKinds.length) run()
    else session.timer = setTimeout(run, settleMs)
  }

  /**
   * The seqs of messages the broker sends a client's session itself: its stored queue, and the
   * retained config, which every SUBSCRIBE to the config topic gets.
   */
  async function storedSeqs(client: Client, deviceId: string): Promise<{ holding: Set<number>; queuedUpTo: number }> {
    const holding = new Set<number>()
    let queuedUpTo = 0
    if (!downlink) return { holding, queuedUpTo }
    const persistence = sessionStore(aedes)
    const add = (p: StoredPacket) => {
      const seq = p.payload ? downlink.seqOf(Buffer.from(p.payload)) : undefined
      if (seq === undefined) return
      holding.add(seq)
      // A retained message is queued past the offline cap (see publish): it says nothing about what came before it.
      if (!isRetainedKind(deviceId, p.topic) && seq > queuedUpTo) queuedUpTo = seq
    }
    if (!client.clean) for await (const p of persistence.outgoingStream({ id: client.id })) add(p)
    const topics = retainedKinds.map((k) => topicFor(deviceId, k))
    // Single node: the retained tree itself (broker/retained.ts), without a stream per connect.
    const tree = (persistence as { retained?: RetainedTree }).retained
    if (tree) for (const p of tree.match(topics)) add(p as StoredPacket)
    else for await (const p of persistence.createRetainedStreamCombi(topics)) add(p)
    return { holding, queuedUpTo }
  }

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
  emitterOf(aedes).on(KICK_TOPIC, (packet, cb) => {
    void kickLocal(packet.payload.toString('utf8'), 'kicked')
    cb()
  })

  async function kick(deviceId: string, reason: DisconnectReason = 'kicked') {
    if (await kickLocal(deviceId, reason)) return true
    if (deps.mq)
      await publisher.publish({
        cmd: 'publish',
        topic: KICK_TOPIC,
        payload: Buffer.from(deviceId),
        qos: 0,
        retain: false,
        dup: false,
      } as PublishPacket)
    return false
  }

  // Revocations arrive in bursts (a sign-out clears, an admin bans several users): one check runs
  // at a time, and requests made meanwhile share the next one.
  let revalidating: Promise<number> | undefined
  let again: Promise<number> | undefined
  function revalidateApps(): Promise<number> {
    if (!revalidating) {
      revalidating = checkApps().finally(() => (revalidating = undefined))
      return revalidating
    }
    again ??= revalidating
      .catch(() => 0)
      .then(() => {
        again = undefined
        return revalidateApps()
      })
    return again
  }
  async function checkApps(): Promise<number> {
    const apps = Object.values(connectedClients(aedes)).filter((c) => meta.get(c)?.kind === 'app' && !c.closed)
    if (!apps.length) return 0
    const live = await liveSessionIds(db, [...new Set(apps.map((c) => meta.get(c)?.sessionId ?? ''))].filter(Boolean))
    const revoked = apps.filter((c) => !live.has(meta.get(c)?.sessionId ?? ''))
    const lost = await appsThatLostAccess(apps.filter((c) => live.has(meta.get(c)?.sessionId ?? '')))
    const closing = [...revoked, ...lost]
    // The whole connection, not the one subscription: MQTT 3.1.1 has no way to tell a client that
    // the server dropped a subscription, so a silent unsubscribe would leave an app showing a
    // "live" view that never changes again. Closed, it reconnects and subscribes again, and the
    // SUBACK refuses (0x80) what it may no longer watch: the loss is visible.
    await Promise.all(closing.map((c) => new Promise<void>((resolve) => c.close(() => resolve()))))
    if (revoked.length) log.info({ apps: revoked.length }, 'closed companion app connections whose session was revoked')
    if (lost.length) log.info({ apps: lost.length }, 'closed companion app connections watching a device their user may no longer see')
    return closing.length
  }

  /** Apps holding a subscription to a device their user may no longer see, in one query per batch. */
  async function appsThatLostAccess(apps: Client[]): Promise<Client[]> {
    const pairs = new Map<string, { userId: string; deviceId: string }>()
    const watched = new Map<Client, string[]>()
    for (const c of apps) {
      const userId = meta.get(c)?.subject ?? ''
      const keys: string[] = []
      for (const filter of Object.keys(subscriptionsOf(c))) {
        // Apps hold only the filters authorizeSubscribe granted: one device's state or events each.
        const deviceId = appSubscriptionTarget(filter)
        if (!deviceId) continue
        const key = `${userId}|${deviceId}`
        pairs.set(key, { userId, deviceId })
        keys.push(key)
      }
      if (keys.length) watched.set(c, keys)
    }
    const all = [...pairs.values()]
    const visible = new Set<string>()
    for (let i = 0; i < all.length; i += ACCESS_BATCH)
      for (const k of await visiblePairs(db, all.slice(i, i + ACCESS_BATCH))) visible.add(k)
    return [...watched].filter(([c, keys]) => !c.closed && keys.some((k) => !visible.has(k))).map(([c]) => c)
  }

  // A device deleted (or moved) on any instance: every instance checks its own apps.
  emitterOf(aedes).on(REVALIDATE_TOPIC, (_packet, cb) => {
    revalidateApps().catch((err) => log.warn({ err }, 'could not revalidate companion app connections'))
    cb()
  })

  async function revalidateAppsEverywhere(): Promise<void> {
    // Without a shared emitter this instance is the cluster.
    if (!deps.mq) {
      await revalidateApps()
      return
    }
    await publisher.publish({
      cmd: 'publish',
      topic: REVALIDATE_TOPIC,
      payload: Buffer.alloc(0),
      qos: 0,
      retain: false,
      dup: false,
    } as PublishPacket)
  }

  await releaseNode(deps.id, 'server_shutdown')
  // This node's own stored wills from its earlier runs: the state published above replaces them.
  const persistence = sessionStore(aedes)
  // The store skips the wills of brokers it is told are alive: every broker but this node's
  // earlier runs counts as alive here, so a node joining a large fleet reads none of theirs.
  const otherBrokers = new Proxy({}, { get: (_, id) => typeof id !== 'string' || id === instance || nodeOf(id) !== deps.id })
  for await (const will of persistence.streamWill(otherBrokers)) {
    if (will.brokerId !== instance && nodeOf(will.brokerId) === deps.id)
      await persistence.delWill({ id: will.clientId, brokerId: will.brokerId })
  }
  const nodeWatch = deps.mq ? watchNodes() : undefined

  /**
   * Devices the database shows connected through `node` when it cannot be holding them: this node
   * at start (it stopped without closing them: a crash), or another node that went silent. They
   * are recorded offline with a disconnect event for their connection, in one transaction, and
   * their retained state says so. When several nodes notice the same dead one, the update gives
   * each device to one of them.
   */
  async function releaseNode(node: string, reason: 'server_shutdown' | 'node_lost') {
    const at = new Date()
    const released = await db.transaction(async (tx) => {
      const rows = await releaseNodeConnections(tx, node, at)
      await insertEvents(
        tx,
        rows.map((d) => ({
          type: 'device.disconnected',
          deviceId: d.id,
          userId: d.userId,
          organizationId: d.organizationId,
          data: { reason, clean: false, connectionId: d.previousConnectionId ?? null },
          at,
        })),
      )
      return rows
    })
    if (!released.length) return
    for (const d of released) {
      await presence.retainedState(d.id, { online: false, since: at.toISOString(), reason })
      // A restart is not news to the owner; a node that died under a device is.
      if (reason === 'node_lost' && d.wasActive)
        deps.onPresence?.({ deviceId: d.id, deviceName: d.name, userId: d.userId, online: false, reason, at })
    }
    log.warn(
      { devices: released.length, node },
      reason === 'node_lost'
        ? 'a cluster node went silent: its devices are now offline'
        : 'devices still shown connected through this node from its last run are now offline',
    )
  }

  /**
   * Cluster mode: every node heartbeats on the shared emitter (aedes); one silent for three
   * intervals is dead. Nodes that died before this one could hear from them are found in the
   * database once this node has listened for a whole window, and again every few intervals.
   */
  function watchNodes() {
    const every = deps.heartbeatMs ?? 60_000
    const startedAt = Date.now()
    const heard = new Set<string>()
    let rounds = 0
    let running = false
    const round = async () => {
      const now = Date.now()
      const brokers = aedes.brokers
      const alive = new Set([
        instance,
        ...Object.entries(brokers)
          .filter(([, at]) => at + 3 * every >= now)
          .map(([id]) => id),
      ])
      const dead = new Set([...heard].filter((id) => !alive.has(id)))
      for (const id of alive) heard.add(id)
      for (const id of dead) heard.delete(id)
      if (now - startedAt > 3 * every && rounds++ % 6 === 0)
        for (const id of await nodesHoldingDevices(db)) if (!alive.has(id)) dead.add(id)
      for (const id of dead) await releaseNode(id, 'node_lost')
    }
    const timer = setInterval(() => {
      if (running) return
      running = true
      round()
        .catch((err) => log.warn({ err }, 'checking for dead cluster nodes failed'))
        .finally(() => (running = false))
    }, every)
    timer.unref()
    return { stop: () => clearInterval(timer) }
  }

  return {
    server,
    aedes,
    stats,
    uplinkStats: uplink.stats,
    publish,
    kick: (id: string, reason?: string) => kick(id, (reason as DisconnectReason) ?? 'kicked'),
    /** Live state of a device whose presence the service decides (polling frames): as presence.ts publishes it for MQTT devices. */
    async announce(deviceId: string, state: PresenceState, event?: object) {
      await presence.retainedState(deviceId, state)
      if (event) await presence.event(deviceId, event)
    },
    revalidateApps,
    revalidateAppsEverywhere,
    listen: (port: number, host?: string) => server.listenTcp(port, host),
    listenTls: (port: number, host?: string) => server.listenTls(port, host),
    async close() {
      for (const client of [...current.values(), ...Object.values(connectedClients(aedes))]) {
        const m = meta.get(client)
        if (m) m.reason ??= 'server_shutdown'
        withoutWill(client)
      }
      nodeWatch?.stop()
      // Everything the service asked to publish goes out before the clients are closed.
      await publisher.drain()
      await server.close()
      await presence.settled()
      await uplink.settled()
    },
  }
}
