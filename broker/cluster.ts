// Scale-out through Redis: mqemitter-redis carries publishes between instances and
// aedes-persistence-redis keeps retained messages and offline queues, with our stores for wills
// (redis-wills.ts) and the subscriptions a publish is queued for (redis-subscriptions.ts), so a
// device on instance A receives what instance B publishes and reconnecting to B gets what
// queued on A. Payloads crossing the cluster stay small (images travel as URLs): Redis drops a
// pub/sub link silently once its output buffer limit is passed.
import { createRequire } from 'node:module'
import { type SubscriptionsConnection, withRedisSubscriptions } from './redis-subscriptions.js'
import { withRedisWills, type WillsConnection } from './redis-wills.js'

const require = createRequire(import.meta.url)

type Closable = { close(cb: () => void): void }
type Emitter = { on(event: 'error', listener: (err: Error) => void): unknown }
export type ClusterParts = {
  mq: Closable
  persistence: unknown
  /** Messages in a client's stored outgoing queue (aedes-persistence-redis' list of it). */
  queuedFor(clientId: string): Promise<number>
  close(): Promise<void>
}

type Persistence = { addSubscriptions(client: unknown, subs: unknown[]): Promise<unknown> }

type Packet = { topic: string; [k: string]: unknown }
type Handler = (packet: Packet, cb: () => void) => void
type MqEmitter = Closable & {
  size?: number
  on(topic: string, fn: Handler, done?: () => void): unknown
  removeListener(topic: string, fn: Handler, done?: () => void): unknown
  emit(packet: Packet, done?: (err?: Error) => void): unknown
  state: Emitter
}

/**
 * Redis pub/sub channels are global (neither key prefixes nor database numbers apply), so two
 * deployments sharing one Redis, or two test runs, would see each other's publishes and $SYS
 * messages (aedes closes a local client when another broker announces the same client id). Each
 * topic is sent under `prefix` and handed back without it.
 */
export function prefixedChannels(inner: MqEmitter, prefix: string): MqEmitter {
  // Each subscription's wrapper, to remove the same one later. aedes hands a new handler per
  // subscription (closing over its client), so entries go as soon as they are removed.
  const wrapped = new Map<Handler, Map<string, Handler[]>>()
  const unprefixed = (packet: Packet): Packet => ({
    ...packet,
    topic: packet.topic.startsWith(prefix) ? packet.topic.slice(prefix.length) : packet.topic,
  })
  return {
    state: inner.state,
    on(topic, fn, done) {
      let byTopic = wrapped.get(fn)
      if (!byTopic) wrapped.set(fn, (byTopic = new Map()))
      const handler: Handler = (packet, cb) => fn(unprefixed(packet), cb)
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), handler])
      return inner.on(prefix + topic, handler, done)
    },
    removeListener(topic, fn, done) {
      const byTopic = wrapped.get(fn)
      const handlers = byTopic?.get(topic)
      const handler = handlers?.shift()
      if (!byTopic || !handlers || !handler) {
        done?.()
        return this
      }
      if (!handlers.length) byTopic.delete(topic)
      if (!byTopic.size) wrapped.delete(fn)
      return inner.removeListener(prefix + topic, handler, done)
    },
    /** Subscriptions held (for tests: none may outlive its removal). */
    get size() {
      let n = 0
      for (const byTopic of wrapped.values()) for (const list of byTopic.values()) n += list.length
      return n
    },
    emit(packet, done) {
      return inner.emit({ ...packet, topic: prefix + packet.topic }, done)
    },
    close(cb) {
      inner.close(cb)
    },
  }
}

/**
 * aedes stores a SUBSCRIBE's whole topic list once per topic, concurrently (with
 * aedes-persistence-redis' own index only the last of those waits for its broadcast was ever
 * answered, so a multi-topic SUBSCRIBE never got its SUBACK). One write per list, shared by
 * every caller: the same list is not written once per topic.
 */

/**
 * mqemitter-redis and aedes-persistence-redis send some commands without handling the promise
 * (quit() at close, lrem of the will list on every disconnect, also after the service closed the
 * connection). Each returned promise gets a handler here, so one that fails is reported instead
 * of becoming an unhandled rejection that ends the process; a caller awaiting it still gets the
 * error. Each method is wrapped once, not on every call: publishes go through here.
 */
function observedCommands<T extends object>(conn: T, report: (err: Error) => unknown): T {
  const wrapped = new Map<PropertyKey, (...args: unknown[]) => unknown>()
  return new Proxy(conn, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      let fn = wrapped.get(prop)
      if (!fn) {
        fn = function (this: unknown, ...args: unknown[]) {
          const result = (Reflect.get(target, prop) as (...a: unknown[]) => unknown).apply(this === receiver ? target : this, args)
          if (result instanceof Promise) result.catch(report)
          return result
        }
        wrapped.set(prop, fn)
      }
      return fn
    },
  })
}

function sharedSubscriptionWrites<T extends Persistence>(persistence: T): T {
  const inFlight = new WeakMap<object, Promise<unknown>>()
  const add = persistence.addSubscriptions.bind(persistence)
  return new Proxy(persistence, {
    get(target, prop, receiver) {
      if (prop === 'addSubscriptions') {
        return (client: unknown, subs: unknown[]) => {
          const pending = inFlight.get(subs)
          if (pending) return pending
          const p = add(client, subs).finally(() => inFlight.delete(subs))
          inFlight.set(subs, p)
          return p
        }
      }
      const value = Reflect.get(target, prop, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * Redis errors (a dropped link, a refused ready check) are reported through `onError` and never
 * thrown: ioredis reconnects by itself and aedes keeps serving local clients meanwhile. Without a
 * listener, mqemitter-redis re-emits them on an EventEmitter that would crash the process.
 */
export function redisClusterParts(redisUrl: string, prefix: string, onError: (err: Error, part: string) => void): ClusterParts {
  const MQEmitterRedis = require('mqemitter-redis') as (opts: object) => Closable & { state: Emitter }
  // The callback/stream flavour: aedes 1.x pipes retained-message streams from it.
  const redisPersistence = require('aedes-persistence-redis') as (opts: object) => unknown
  const Redis = require('ioredis') as new (opts: object) => Emitter & { disconnect(): void; llen(key: string): Promise<number> }
  const u = new URL(redisUrl)
  const connection = {
    host: u.hostname,
    port: Number(u.port || 6379),
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0,
    tls: u.protocol === 'rediss:' ? {} : undefined,
    // Keeps every key of the broker under REDIS_PREFIX; pub/sub channels are prefixed below.
    keyPrefix: `${prefix}mqtt:`,
  }
  // Our own connection for the persistence: its destroy() unsubscribes through the broker's
  // emitter, which aedes has already closed by then, and would never return. Auto-pipelined: a
  // CONNECT storm's session reads and writes, issued a few per client in the same tick, go out in
  // one socket write instead of one each (sending them was 15-17 % of an instance's CPU in the
  // fleet profile, docs/benchmarks.md).
  const conn = new Redis({ ...connection, enableAutoPipelining: true })
  conn.on('error', (err) => onError(err, 'persistence'))
  let closing = false
  const observed = observedCommands(conn, (err) => closing || onError(err, 'persistence'))
  // The emitter's two connections are ours too: mqemitter-redis ends them with quit() and leaves
  // the promise unhandled, which rejects when the socket closes before QUIT is answered.
  const emitterConn = () =>
    observedCommands(new Redis({ ...connection, enableAutoPipelining: true }), (err) => closing || onError(err, 'emitter'))
  const redisMq = MQEmitterRedis({ ...connection, subConn: emitterConn(), pubConn: emitterConn() })
  redisMq.state.on('error', (err) => onError(err, 'emitter'))
  const mq = prefixedChannels(redisMq as unknown as MqEmitter, `${prefix}mqtt/`)
  const closeEmitter = mq.close.bind(mq)
  mq.close = (cb) => {
    closing = true
    closeEmitter(cb)
  }
  return {
    mq,
    persistence: sharedSubscriptionWrites(
      withRedisSubscriptions(
        withRedisWills(
          redisPersistence({ conn: observed, maxSessionDelivery: 1000 }) as Persistence,
          observed as unknown as WillsConnection,
        ),
        observed as unknown as SubscriptionsConnection,
      ),
    ),
    // The list key aedes-persistence-redis keeps per client (under our keyPrefix).
    queuedFor: (clientId) => conn.llen(`outgoing:${encodeURIComponent(clientId)}`),
    async close() {
      closing = true
      conn.disconnect()
    },
  }
}
