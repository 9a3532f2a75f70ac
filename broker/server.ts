// A generic aedes broker with its listeners and the limits aedes lacks: maximum packet size,
// connection rate per address, a refused empty client id on persistent sessions. Hooks are
// injected (the service's device/app rules, or permissive ones for the standalone broker).
import type { EventEmitter } from 'node:events'
import { createRequire } from 'node:module'
import { createServer, type Server, type Socket } from 'node:net'
import { createSecureContext, createServer as createTlsServer, type Server as TlsServer } from 'node:tls'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { Aedes, type AedesOptions, type Client } from 'aedes'
import mqttPacket from 'mqtt-packet'
import { createWebSocketStream, WebSocketServer } from 'ws'
import { connackGate } from './connack-gate.js'
import { dedupeByIdentity } from './dedupe.js'
import { storedQueue, type StoredQueueRules } from './stored-queue.js'
import { withRetainedTree } from './retained.js'
import { guardPackets, isCapped, isOverRate, type GuardStats, type InboundLimits, type PacketGuard } from './packet-guard.js'

// mqtt-packet writes 16-bit numbers (message ids, lengths) from a cache of 65,536 two-byte
// Buffers it builds on its first write: ~6.5 MiB of heap for the life of the process, to save a
// two-byte allocation per packet. Off, the broker's resident memory without sessions is that much
// smaller (mqtt-packet's documented switch; process-wide, MQTT clients in this process included).
mqttPacket.writeToStream.cacheNumbers = false

// CommonJS whose typings declare an ESM default export that does not exist at runtime.
const memoryPersistence = createRequire(import.meta.url)('aedes-persistence') as () => object

/** Where refused publishes go: no filter reaches a $-topic through a wildcard (MQTT-4.7.2-1) and nobody may subscribe to it. */
export const DROP_TOPIC = '$drop/refused'

export type BrokerLimits = InboundLimits & {
  /** Largest MQTT packet accepted, in bytes (aedes has no limit of its own). */
  maxPacketSize: number
  /** New connections allowed per remote address per `connectWindowMs`. */
  connectRate: number
  connectWindowMs: number
  /** Largest keepalive a client may ask for, in seconds; 0 and larger values are refused (0 here = any). */
  keepaliveLimit: number
  /** Messages queued per client before its session is established (aedes queueLimit). */
  queueLimit: number
  /** Inbound QoS 2 messages a client may hold awaiting PUBREL. */
  maxInflight: number
}

export const defaultLimits: BrokerLimits = {
  maxPacketSize: 256 * 1024,
  connectRate: 50,
  connectWindowMs: 10_000,
  keepaliveLimit: 3600,
  queueLimit: 100,
  maxInflight: 100,
  maxSubscriptions: 500,
  inboundRate: 100,
  inboundBurst: 200,
}

export type BrokerHooks = Pick<AedesOptions, 'authenticate' | 'authorizePublish' | 'authorizeSubscribe' | 'authorizeForward' | 'published'>

export type MqttServer = {
  aedes: Aedes
  /**
   * Serves one connection on any duplex stream, with the same limits as a socket (the connection
   * rate counts `remoteAddress`). Tests use in-memory streams, as aedes' own tests do.
   */
  handleStream(stream: Duplex, remoteAddress?: string): void
  /** Starts the TCP listener; resolves with the bound port. */
  listenTcp(port: number, host?: string): Promise<number>
  /** Starts a TLS listener (needs `tls` options); resolves with the bound port. */
  listenTls(port: number, host?: string): Promise<number>
  /**
   * Replaces the TLS key and certificate (a renewed certificate): new handshakes use them, open
   * connections keep theirs. Throws, changing nothing, when they are unusable (not PEM, not a pair).
   */
  setTlsCredentials(tls: { key: Buffer; cert: Buffer }): void
  /**
   * Serves MQTT over WebSocket on an existing HTTP server at `path`. `clientAddress` names the
   * client behind a trusted proxy (its connection rate and presence events use it).
   */
  attachWebSocket(server: import('node:http').Server, path: string, clientAddress?: (req: IncomingMessage) => string | undefined): void
  remoteAddress(client: Client): string | undefined
  /** What the inbound checks refused (packet-guard.ts). */
  guardStats: GuardStats
  close(): Promise<void>
}

/** Set in preConnect, answered in authenticate (aedes sends a CONNACK return code only from there). */
type RefuseReason = { code: 2; message: string }

/**
 * Connections the kernel holds accepted before the broker takes them (capped by
 * net.core.somaxconn). Node's default, 511, overflowed when 100,000 devices reconnected at once
 * (3,243 SYNs dropped on 6 instances; each dropped SYN costs its device a retransmit of 1, 2, 4…
 * seconds, and one device waited past a minute).
 */
export const LISTEN_BACKLOG = 4096

export async function createMqttServer(opts: {
  id: string
  limits: BrokerLimits
  hooks: BrokerHooks
  mq?: AedesOptions['mq']
  persistence?: AedesOptions['persistence']
  onReject?: (reason: string, remoteAddress?: string) => void
  tls?: { key: Buffer; cert: Buffer }
  /** aedes' heartbeatInterval in ms (default 60,000). */
  heartbeatMs?: number
  /** What a starting session is sent from its stored queue (stored-queue.ts); everything when absent. */
  storedQueue?: StoredQueueRules
  /**
   * A failure of the broker's own work, not of one client's (the cluster store failing under the
   * sweep of dead nodes' wills, or under a publish's subscriber lookup): aedes emits it as 'error'
   * on itself, which without a listener would end the process. Reported; the broker keeps serving.
   */
  onError?: (err: Error) => void
}): Promise<MqttServer> {
  const { limits } = opts
  /** Each client's remote address (a string per client, not an object around it). */
  const connInfo = new WeakMap<object, string>()
  const refusals = new WeakMap<Client, RefuseReason>()
  const guardStats: GuardStats = { nulClosed: 0, subscriptionsCapped: 0, rateDropped: 0, rateClosed: 0 }

  // Single-node: aedes' in-memory persistence with retained messages in a topic tree (retained.ts).
  const persistence = opts.persistence ?? (withRetainedTree(memoryPersistence()) as unknown as AedesOptions['persistence'])
  const stored = opts.storedQueue && storedQueue(opts.storedQueue)
  const aedes = await Aedes.createBroker({
    id: opts.id,
    mq: opts.mq,
    persistence: stored && persistence ? stored.persistence(persistence) : persistence,
    // aedes refuses with return code 6, which MQTT 3.1.1 does not define; preConnect refuses instead.
    keepaliveLimit: 0,
    queueLimit: limits.queueLimit,
    maxInflightInbound: limits.maxInflight,
    maxClientsIdLength: 128,
    // How often a node tells the cluster it is alive; a node silent for three intervals is dead
    // (its stored wills are published, and the device side releases its devices).
    ...(opts.heartbeatMs ? { heartbeatInterval: opts.heartbeatMs } : {}),
    connectTimeout: 10_000,
    drainTimeout: 30_000,
    ...opts.hooks,
    authorizePublish(client, packet, done) {
      if (client && isOverRate(packet)) {
        packet.topic = DROP_TOPIC
        packet.retain = false
        return done(null)
      }
      if (opts.hooks.authorizePublish) return opts.hooks.authorizePublish(client, packet, done)
      done(null)
    },
    authorizeForward(client, packet) {
      if (stored && !stored.forward(client, packet)) return null
      return opts.hooks.authorizeForward ? opts.hooks.authorizeForward(client, packet) : packet
    },
    authorizeSubscribe(client, sub, done) {
      if (isCapped(sub)) return done(null, null)
      if (opts.hooks.authorizeSubscribe) return opts.hooks.authorizeSubscribe(client, sub, done)
      done(null, sub)
    },
    authenticate(client, username, password, done) {
      const refuse = refusals.get(client)
      if (refuse) {
        opts.onReject?.(refuse.message, connInfo.get(client))
        return done(connackError(refuse.code, refuse.message), false)
      }
      if (opts.hooks.authenticate) return opts.hooks.authenticate(client, username, password, done)
      done(null, true)
    },
    preConnect(client, packet, done) {
      dedupeByIdentity(client)
      gate.hold(client)
      // MQTT-3.1.3-8: an empty client id needs CleanSession=1; aedes would invent an id instead.
      if (!packet.clientId && packet.clean === false) {
        refusals.set(client, { code: 2, message: 'a persistent session needs a client id' })
      }
      // MQTT 3.1.1 cannot tell a client to use another keepalive (section 3.1.2.10), so one outside
      // the bound is refused as Mosquitto's max_keepalive does: "identifier rejected". 0 (never
      // time out) is outside any bound, since the connection would then be held forever.
      const k = packet.keepalive ?? 0
      if (limits.keepaliveLimit > 0 && (k === 0 || k > limits.keepaliveLimit)) {
        refusals.set(client, { code: 2, message: `keepalive must be between 1 and ${limits.keepaliveLimit} seconds` })
      }
      done(null, true)
    },
  })

  // aedes' types leave out the 'error' it emits on itself (aedes.js: the will sweep, enqueue).
  ;(aedes as unknown as EventEmitter).on('error', (err: Error) => opts.onError?.(err))
  const gate = connackGate(aedes)
  const seen = new Map<string, { count: number; resetAt: number }>()
  function admit(address: string | undefined): boolean {
    if (!address || limits.connectRate <= 0) return true
    const now = Date.now()
    let e = seen.get(address)
    if (!e || e.resetAt <= now) {
      if (seen.size > 50_000) for (const [k, v] of seen) if (v.resetAt <= now) seen.delete(k)
      e = { count: 0, resetAt: now + limits.connectWindowMs }
      seen.set(address, e)
    }
    e.count += 1
    return e.count <= limits.connectRate
  }

  const packetGuard: PacketGuard = {
    limits,
    stats: guardStats,
    maxPacketSize: limits.maxPacketSize,
    onTooLarge: (client) => opts.onReject?.('packet too large', connInfo.get(client)),
  }

  function handle(stream: Duplex, remoteAddress: string | undefined, req?: IncomingMessage) {
    if (!admit(remoteAddress)) {
      opts.onReject?.('connection rate', remoteAddress)
      stream.destroy()
      return
    }
    const client = aedes.handle(stream, req)
    if (remoteAddress !== undefined) connInfo.set(client, remoteAddress)
    guardPackets(client, packetGuard)
  }

  const sockets = new Set<Socket>()
  const servers: Server[] = []
  const tlsServers: TlsServer[] = []
  let tlsCredentials = opts.tls
  let wss: WebSocketServer | undefined

  // Shared by every socket (no closures per connection): `this` is the socket.
  function forget(this: Socket) {
    sockets.delete(this)
  }
  function onSocket(socket: Socket) {
    sockets.add(socket)
    socket.on('close', forget)
    // A malformed stream errors that socket only: aedes listens for 'error' on the connection it
    // handles (below, synchronously) and destroys it, and leaves a listener on it once closed.
    // One listener of our own more would cost every idle socket a listener array (~200 bytes).
    handle(socket, socket.remoteAddress)
  }

  function listenOn(server: Server, port: number, host?: string): Promise<number> {
    servers.push(server)
    return new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject)
        resolve((server.address() as { port: number }).port)
      })
    })
  }

  return {
    aedes,
    remoteAddress: (client) => connInfo.get(client),
    guardStats,
    handleStream(stream, remoteAddress) {
      stream.on('error', () => stream.destroy())
      handle(stream, remoteAddress)
    },
    listenTcp(port, host) {
      return listenOn(createServer(onSocket), port, host)
    },
    listenTls(port, host) {
      if (!tlsCredentials) return Promise.reject(new Error('no TLS certificate configured'))
      const server = createTlsServer({ key: tlsCredentials.key, cert: tlsCredentials.cert }, onSocket)
      // A failed handshake is that client's problem only.
      server.on('tlsClientError', (_err, socket) => socket.destroy())
      tlsServers.push(server)
      return listenOn(server, port, host)
    },
    setTlsCredentials(tls) {
      // Built once first so a bad pair throws here, before any listener has taken it.
      createSecureContext({ key: tls.key, cert: tls.cert })
      tlsCredentials = tls
      for (const server of tlsServers) server.setSecureContext({ key: tls.key, cert: tls.cert })
    },
    attachWebSocket(server, path, clientAddress) {
      wss = new WebSocketServer({ noServer: true, maxPayload: limits.maxPacketSize + 8 })
      const ws = wss
      server.on('upgrade', (req, socket, head) => {
        if ((req.url ?? '').split('?')[0] !== path) {
          // Node leaves an unanswered upgrade open forever: answer it unless another listener will.
          if (server.listenerCount('upgrade') === 1) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
          return
        }
        ws.handleUpgrade(req, socket as Socket, head, (conn) => {
          const stream = createWebSocketStream(conn)
          stream.on('error', () => stream.destroy())
          handle(stream, clientAddress?.(req) ?? req.socket.remoteAddress, req)
        })
      })
    },
    async close() {
      // Stop accepting, then close every client (aedes sends nothing more), then the sockets.
      const listenersClosed = Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))))
      wss?.close()
      await new Promise<void>((resolve) => aedes.close(() => resolve()))
      for (const s of sockets) s.destroy()
      await listenersClosed
    },
  }
}

/** Builds the error aedes turns into a CONNACK return code (MQTT 3.1.1 section 3.2.2.3). */
export function connackError(returnCode: 2 | 3 | 4 | 5, message: string) {
  return Object.assign(new Error(message), { returnCode })
}
