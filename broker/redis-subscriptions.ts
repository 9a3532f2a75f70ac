// Stored subscriptions in cluster mode, looked up in Redis instead of aedes-persistence-redis'
// in-memory tree of every session's subscriptions. That tree is what a QoS 1 publish consults to
// queue a copy for every persistent session subscribed to its topic (aedes' enqueueOffline:
// subscriptionsByTopic, then outgoingEnqueueCombi), so every instance kept all of the cluster's:
// each SUBSCRIBE was broadcast on $SYS/sub/add to every instance, which decoded it and added it to
// its tree, and an instance starting read every stored session (one HGETALL each). An instance's
// CPU per connect thus grew with the devices connected to the others, and its memory with the
// fleet (docs/benchmarks.md "Fleet"). Here each subscription of QoS 1 or 2 is also written to a
// Redis hash named by its filter's literal levels (those before the first wildcard), and a publish
// reads the hashes of its topic's 0..n first levels in one round trip: every filter that can match
// the topic is in one of them. Nothing is broadcast, nothing is loaded at start, and a SUBACK no
// longer waits for a broadcast's echo through Redis. Each session's own hash (what a resumed
// session restores) stays as aedes-persistence-redis keeps it.
import { Readable } from 'node:stream'
import { type Callback, msgpack, settle } from './redis-encoding.js'

type Sub = { topic: string; qos: number; rh?: number; rap?: boolean; nl?: boolean }
type Client = { id: string }

type Multi = {
  hset(key: string, field: string, value: string | Buffer): Multi
  hdel(key: string, ...fields: string[]): Multi
  hgetall(key: string): Multi
  exec(): Promise<[Error | null, unknown][] | null>
}

/** The ioredis commands used (keys under the persistence's keyPrefix). */
export type SubscriptionsConnection = {
  multi(): Multi
  pipeline(): Multi
  hkeys(key: string): Promise<string[]>
  exists(key: string): Promise<number>
  hgetallBuffer(key: string): Promise<Record<string, Buffer>>
  del(key: string): Promise<number>
  rename(key: string, to: string): Promise<unknown>
  sscan(key: string, cursor: string, count: 'COUNT', n: number): Promise<[string, string[]]>
  scan(cursor: string, match: 'MATCH', pattern: string, count: 'COUNT', n: number): Promise<[string, string[]]>
  hlen(key: string): Promise<number>
  options?: { keyPrefix?: string }
}

/** aedes-persistence-redis' keys: a session's subscriptions, its stored queue, and the set of sessions it loaded at start. */
const clientKey = (clientId: string) => `client:${encodeURIComponent(clientId)}`
const outgoingKey = (clientId: string) => `outgoing:${encodeURIComponent(clientId)}`
const LEGACY_CLIENTS = 'clients'
/** The index: one hash per literal prefix, `subs:` + each literal level followed by '/' ('' for a filter starting with a wildcard). */
const INDEX = 'subs:'
const SCAN_COUNT = 500

const isWild = (level: string) => level === '+' || level === '#'

/** The hash a filter is indexed in: its levels before the first wildcard, each followed by '/' (so 'a' and 'a/' differ). */
export function literalPrefix(filter: string): string {
  let prefix = ''
  for (const level of filter.split('/')) {
    if (isWild(level)) break
    prefix += `${level}/`
  }
  return INDEX + prefix
}

/** The hashes that may hold a filter matching `topic`: its first 0, 1, … n levels. */
export function candidateKeys(topic: string): string[] {
  const keys = [INDEX]
  let prefix = ''
  for (const level of topic.split('/')) {
    prefix += `${level}/`
    keys.push(INDEX + prefix)
  }
  return keys
}

/** MQTT matching: '+' one level (empty ones too), '#' the rest, the parent level included. */
function matches(filter: string, topic: string): boolean {
  if (filter === topic) return true
  const f = filter.split('/')
  const t = topic.split('/')
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true
    if (i >= t.length || (f[i] !== '+' && f[i] !== t[i])) return false
  }
  return f.length === t.length
}

// A field is the client id (encoded: no ':' left in it) and the filter; its value the
// subscription's options, short since a topic every device subscribes to is read whole.
const field = (clientId: string, filter: string) => `${encodeURIComponent(clientId)}:${filter}`
const encodeOptions = (s: Sub) => `${s.qos}|${s.rh ?? 0}|${s.rap ? 1 : 0}|${s.nl ? 1 : 0}`

function decodeEntry(name: string, value: string): Sub & { clientId: string } {
  const at = name.indexOf(':')
  const [qos, rh, rap, nl] = value.split('|')
  return {
    clientId: decodeURIComponent(name.slice(0, at)),
    topic: name.slice(at + 1),
    qos: Number(qos),
    rh: Number(rh),
    rap: rap === '1',
    nl: nl === '1',
  }
}

/** What aedes-persistence-redis stored per session: msgpack, or (its version 8) the QoS digit alone. */
function decodeStored(topic: string, value: Buffer): Sub {
  return value.length === 1 ? { topic, qos: Number.parseInt(value.toString(), 10) } : (msgpack.decode(value) as Sub)
}

function failed(results: [Error | null, unknown][] | null): Error | undefined {
  return results?.find(([err]) => err)?.[0] ?? undefined
}

type Persistence = { setup(broker: { id: string }): Promise<unknown> }

type SubscriptionStore = {
  addSubscriptions(client: Client, subs: Sub[]): Promise<void>
  removeSubscriptions(client: Client, topics: string[]): Promise<void>
  cleanSubscriptions(client: Client): Promise<void>
  subscriptionsByTopic(topic: string): Promise<(Sub & { clientId: string })[]>
  countOffline(): Promise<{ subsCount: number; clientsCount: number }>
  getClientList(topic: string): Promise<string[]>
  /** Indexes the sessions an earlier version listed (its set of every session), then drops the set. */
  adoptLegacySessions(brokerId: string): Promise<number>
}

function redisSubscriptions(db: SubscriptionsConnection): SubscriptionStore {
  const store: SubscriptionStore = {
    async addSubscriptions(client, subs) {
      if (!subs.length) return
      const m = db.multi()
      for (const s of subs) {
        m.hset(clientKey(client.id), s.topic, msgpack.encode(s))
        // QoS 0 is never queued (aedes' own tree dropped it too); a downgrade removes the entry.
        if (s.qos > 0) m.hset(literalPrefix(s.topic), field(client.id, s.topic), encodeOptions(s))
        else m.hdel(literalPrefix(s.topic), field(client.id, s.topic))
      }
      const err = failed(await m.exec())
      if (err) throw err
    },
    async removeSubscriptions(client, topics) {
      if (!topics.length) return
      const m = db.multi().hdel(clientKey(client.id), ...topics)
      for (const topic of topics) m.hdel(literalPrefix(topic), field(client.id, topic))
      const results = await m.exec()
      const err = failed(results)
      if (err) throw err
      // As aedes-persistence-redis did: a session left without subscriptions loses its stored queue.
      if ((await db.exists(clientKey(client.id))) === 0) await db.del(outgoingKey(client.id))
    },
    async cleanSubscriptions(client) {
      const topics = await db.hkeys(clientKey(client.id))
      await store.removeSubscriptions(client, topics)
    },
    async subscriptionsByTopic(topic) {
      const p = db.pipeline()
      for (const key of candidateKeys(topic)) p.hgetall(key)
      const results = await p.exec()
      const err = failed(results)
      if (err) throw err
      const subs: (Sub & { clientId: string })[] = []
      for (const [, hash] of results ?? []) {
        for (const [name, value] of Object.entries(hash as Record<string, string>)) {
          const sub = decodeEntry(name, value)
          if (matches(sub.topic, topic)) subs.push(sub)
        }
      }
      return subs
    },
    async countOffline() {
      // For tooling (aedes does not call it): counted by scanning, as nothing keeps totals.
      const prefix = db.options?.keyPrefix ?? ''
      const scan = async (pattern: string, each: (key: string) => Promise<unknown>) => {
        let cursor = '0'
        do {
          const [next, keys] = await db.scan(cursor, 'MATCH', prefix + pattern, 'COUNT', SCAN_COUNT)
          cursor = next
          for (const key of keys) await each(key.slice(prefix.length))
        } while (cursor !== '0')
      }
      let clientsCount = 0
      let subsCount = 0
      await scan('client:*', async () => clientsCount++)
      await scan(`${INDEX}*`, async (key) => (subsCount += await db.hlen(key)))
      return { subsCount, clientsCount }
    },
    async getClientList(topic) {
      // The clients subscribed to this very filter (aedes-persistence's meaning), QoS 0 ones aside.
      const names = await db.hkeys(literalPrefix(topic))
      return names.map((n) => decodeEntry(n, '0')).flatMap((s) => (s.topic === topic ? [s.clientId] : []))
    },
    async adoptLegacySessions(brokerId) {
      const moving = `${LEGACY_CLIENTS}-adopting:${brokerId}`
      try {
        await db.rename(LEGACY_CLIENTS, moving)
      } catch (err) {
        if (/no such key/i.test((err as Error).message)) return 0
        throw err
      }
      let n = 0
      let cursor = '0'
      do {
        const [next, ids] = await db.sscan(moving, cursor, 'COUNT', SCAN_COUNT)
        cursor = next
        for (const id of ids) {
          const stored = await db.hgetallBuffer(clientKey(id))
          const subs = Object.entries(stored).map(([topic, value]) => decodeStored(topic, value))
          const m = db.multi()
          for (const s of subs) if (s.qos > 0) m.hset(literalPrefix(s.topic), field(id, s.topic), encodeOptions(s))
          const err = failed(await m.exec())
          if (err) throw err
          n++
        }
      } while (cursor !== '0')
      await db.del(moving)
      return n
    },
  }
  return store
}

/**
 * aedes-persistence-redis (its callback flavour) with `redisSubscriptions` in place of its
 * subscription index; everything else is its own. Its setup then finds no session to load (an
 * earlier version's sessions are indexed first, and their list dropped).
 */
export function withRedisSubscriptions<T extends object>(persistence: T, db: SubscriptionsConnection): T {
  const target = persistence as T & Persistence
  const store = redisSubscriptions(db)
  const own: Record<string, unknown> = {
    // aedes refuses a setup that is not an async function.
    async setup(broker: { id: string }) {
      await store.adoptLegacySessions(broker.id)
      await target.setup(broker)
    },
    addSubscriptions: (client: Client, subs: Sub[], cb?: Callback) => settle(store.addSubscriptions(client, subs), cb, client),
    removeSubscriptions: (client: Client, topics: string[], cb?: Callback) => settle(store.removeSubscriptions(client, topics), cb, client),
    cleanSubscriptions: (client: Client, cb?: Callback) =>
      settle(
        store.cleanSubscriptions(client).then(() => client),
        cb,
        client,
      ),
    subscriptionsByTopic: (topic: string, cb?: Callback) => {
      const work = store.subscriptionsByTopic(topic)
      if (!cb) return work
      work.then((subs) => process.nextTick(cb, null, subs), cb)
    },
    countOffline: (cb?: (err: Error | null, subsCount?: number, clientsCount?: number) => void) => {
      const work = store.countOffline()
      if (!cb) return work
      work.then((c) => cb(null, c.subsCount, c.clientsCount), cb)
    },
    getClientList: (topic: string) =>
      Readable.from(
        (async function* () {
          yield* await store.getClientList(topic)
        })(),
      ),
  }
  return new Proxy(target, {
    get(t, prop, receiver) {
      if (typeof prop === 'string' && Object.hasOwn(own, prop)) return own[prop]
      return Reflect.get(t, prop, receiver)
    },
  })
}
