// Stored wills in cluster mode, in place of aedes-persistence-redis' own. It keeps every will's key
// in one Redis list and removes one with LREM, which reads the whole list: every device connect
// removed and re-added its will (two LREMs over the wills of every connected device), so Redis'
// cost per connect grew with the fleet, to most of Redis' CPU at 100,000 devices (0.39 ms per
// LREM; docs/benchmarks.md "What was fixed"). Here each broker's wills are a set of client ids
// (SADD and SREM cost the same at any size) beside the same per-will keys and encoding, and a set
// of the broker ids that hold wills lets the sweep of dead brokers skip the live ones' wills.
import { Readable } from 'node:stream'
// The encoding aedes-persistence-redis stores wills in, so wills stored before this module took over still decode.
import { type Callback, msgpack, settle } from './redis-encoding.js'

type WillPacket = { clientId: string; brokerId: string; [k: string]: unknown }

type Pipeline = {
  sadd(key: string, member: string): Pipeline
  srem(key: string, member: string): Pipeline
  set(key: string, value: Buffer): Pipeline
  getBuffer(key: string): Pipeline
  del(key: string): Pipeline
  exec(): Promise<[Error | null, unknown][] | null>
}

/** The ioredis commands used (keys under the persistence's keyPrefix). */
export type WillsConnection = {
  pipeline(): Pipeline
  getBuffer(key: string): Promise<Buffer | null>
  smembers(key: string): Promise<string[]>
  sscan(key: string, cursor: string, count: 'COUNT', n: number): Promise<[string, string[]]>
  srem(key: string, member: string): Promise<number>
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>
  lrange(key: string, start: number, stop: number): Promise<string[]>
  rename(key: string, to: string): Promise<unknown>
  del(key: string): Promise<number>
}

/** aedes-persistence-redis' list of will keys, moved into the sets by `adoptLegacyWills`. */
const LEGACY_LIST = 'will'
const BROKERS = 'will-brokers'
const brokerSet = (brokerId: string) => `wills:${brokerId}`
const willKey = (brokerId: string, clientId: string) => `will:${brokerId}:${encodeURIComponent(clientId)}`
/** A broker id leaves the registry only if its set is still empty, in the same step (a will put meanwhile keeps it). */
const DROP_IF_EMPTY = "if redis.call('scard', KEYS[1]) == 0 then redis.call('srem', KEYS[2], ARGV[1]) end"
const SCAN_COUNT = 500

const failed = (results: [Error | null, unknown][] | null) => results?.find(([err]) => err)?.[0]

type WillStore = {
  putWill(client: { id: string }, packet: WillPacket): Promise<void>
  getWill(client: { id: string }): Promise<WillPacket | null>
  delWill(client: { id: string; brokerId: string }): Promise<WillPacket | null>
  /** Wills of every broker for which `brokers[id]` is not set (aedes' live brokers). */
  streamWill(brokers?: Record<string, unknown>): Readable
  adoptLegacyWills(): Promise<number>
  /** This broker's id. */
  brokerId(): string
}

/** `brokerId`: this broker's id (known once aedes has set the persistence up). */
function redisWills(db: WillsConnection, brokerId: () => string): WillStore {
  async function* wills(brokers: Record<string, unknown>): AsyncGenerator<WillPacket> {
    for (const broker of await db.smembers(BROKERS)) {
      if (brokers[broker]) continue
      let cursor = '0'
      do {
        const [next, members] = await db.sscan(brokerSet(broker), cursor, 'COUNT', SCAN_COUNT)
        cursor = next
        for (const member of members) {
          const value = await db.getBuffer(`will:${broker}:${member}`)
          // An entry whose will is gone (a write that failed half-way): nothing to publish.
          if (value) yield msgpack.decode(value) as WillPacket
          else await db.srem(brokerSet(broker), member)
        }
      } while (cursor !== '0')
      await db.eval(DROP_IF_EMPTY, 2, brokerSet(broker), BROKERS, broker)
    }
  }

  return {
    brokerId,
    async putWill(client, packet) {
      const broker = brokerId()
      packet.clientId = client.id
      packet.brokerId = broker
      // The will before its set entry (and delWill the entry before the will): a sweep that
      // finds an entry without its will may then drop the entry, never a will put meanwhile.
      const results = await db
        .pipeline()
        .set(willKey(broker, client.id), msgpack.encode(packet))
        .sadd(BROKERS, broker)
        .sadd(brokerSet(broker), encodeURIComponent(client.id))
        .exec()
      const err = failed(results)
      if (err) throw err
    },
    async getWill(client) {
      const value = await db.getBuffer(willKey(brokerId(), client.id))
      return value ? (msgpack.decode(value) as WillPacket) : null
    },
    async delWill(client) {
      const key = willKey(client.brokerId, client.id)
      const results = await db.pipeline().srem(brokerSet(client.brokerId), encodeURIComponent(client.id)).getBuffer(key).del(key).exec()
      const err = failed(results)
      if (err) throw err
      const value = results?.[1]?.[1] as Buffer | null | undefined
      return value ? (msgpack.decode(value) as WillPacket) : null
    },
    streamWill(brokers = {}) {
      return Readable.from(wills(brokers))
    },
    /**
     * Wills an earlier version stored in the list (its nodes may have died holding them): renamed
     * away in one step, so a node of that version still running starts a new list, moved on the
     * next start of a node of this one.
     */
    async adoptLegacyWills() {
      const moving = `${LEGACY_LIST}-adopting:${brokerId()}`
      try {
        await db.rename(LEGACY_LIST, moving)
      } catch (err) {
        if (/no such key/i.test((err as Error).message)) return 0
        throw err
      }
      const keys = await db.lrange(moving, 0, -1)
      const p = db.pipeline()
      for (const key of keys) {
        // will:<broker id>:<encoded client id>; a broker id has no ':' (aedes splits on it too).
        const [, broker, member] = key.split(':')
        if (broker && member) p.sadd(BROKERS, broker).sadd(brokerSet(broker), member)
      }
      const err = failed(await p.exec())
      if (err) throw err
      await db.del(moving)
      return keys.length
    },
  }
}

type Persistence = { setup(broker: unknown): Promise<unknown>; broker?: { id: string } }

/**
 * aedes-persistence-redis (its callback flavour, as aedes 1.x is given it) with `redisWills` in
 * place of its will methods; everything else is its own. Legacy wills are adopted at setup.
 */
export function withRedisWills<T extends object>(persistence: T, db: WillsConnection): T {
  const target = persistence as T & Persistence
  const store = redisWills(db, () => {
    const id = target.broker?.id
    if (!id) throw new Error('the persistence is not set up: no broker id for its wills')
    return id
  })
  const own: Record<string, unknown> = {
    // aedes refuses a setup that is not an async function.
    async setup(broker: unknown) {
      await target.setup(broker)
      await store.adoptLegacyWills()
    },
    putWill: (client: { id: string }, packet: WillPacket, cb?: Callback) =>
      settle(
        store.putWill(client, packet).then(() => client),
        cb,
        client,
      ),
    getWill: (client: { id: string }, cb?: Callback) => settle(store.getWill(client), cb, client),
    delWill: (client: { id: string; brokerId?: string; will?: unknown }, cb?: Callback) => {
      // aedes' CONNECT passes the client itself, which has no brokerId: the lookup went to
      // "will:undefined:<id>", three commands per connect that never found anything. Its will is
      // this broker's; one about to be stored (client.will, set just before) replaces it with the
      // same key, so only a connect without a will has one to delete.
      if (client.brokerId === undefined) {
        if (client.will) return settle(Promise.resolve(null), cb, client)
        return settle(store.delWill({ id: client.id, brokerId: store.brokerId() }), cb, client)
      }
      return settle(store.delWill({ id: client.id, brokerId: client.brokerId }), cb, client)
    },
    streamWill: (brokers?: Record<string, unknown>) => store.streamWill(brokers),
  }
  return new Proxy(target, {
    get(t, prop, receiver) {
      if (typeof prop === 'string' && Object.hasOwn(own, prop)) return own[prop]
      return Reflect.get(t, prop, receiver)
    },
  })
}
