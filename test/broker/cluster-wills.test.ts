// Cluster mode stores every connected device's will in Redis (the broker sets one for each). The
// store must not keep one list of every will: removing from a list (LREM) reads all of it, and
// each connect removed and re-added its will, so at 100,000 devices those two commands were most
// of Redis' CPU (docs/benchmarks.md "What was fixed"). The sweep of dead brokers' wills, and
// wills stored in that list by an earlier version, must still work.
import t, { type Test } from 'tap'
import { createRequire } from 'node:module'
import { Redis } from 'ioredis'
import { redisClusterParts } from '../../broker/cluster.js'
import { withRedisWills, type WillsConnection } from '../../broker/redis-wills.js'
import { createMqttServer, defaultLimits } from '../../broker/server.js'
import { redisUrl } from '../helpers/services.js'

const url = await redisUrl()
const skip = url ? false : 'no Redis reachable (set REDIS_URL): the cluster store needs one'

type Will = { clientId: string; brokerId: string; topic: string }
type Wills = {
  putWill(client: { id: string }, packet: object): Promise<unknown>
  delWill(client: { id: string; brokerId: string }): Promise<Will | null>
  streamWill(brokers: object): AsyncIterable<Will>
}
const WILLS = 50

async function startBroker(t: Test, prefix: string, id: string) {
  const parts = redisClusterParts(url as string, prefix, () => {})
  const server = await createMqttServer({ id, limits: defaultLimits, hooks: {}, mq: parts.mq, persistence: parts.persistence })
  t.teardown(async () => {
    await server.close()
    await parts.close()
  })
  return parts.persistence as Wills
}

async function cleanup(redis: Redis, prefix: string) {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length) await redis.unlink(...keys)
}

const willOf = (id: string) => ({ cmd: 'publish', topic: `devices/${id}/state`, payload: Buffer.from('{}'), qos: 1, retain: true })
const collect = async (wills: AsyncIterable<Will>) => {
  const out: Will[] = []
  for await (const w of wills) out.push(w)
  return out
}

t.test('no Redis list grows with the wills: storing and removing one reads none of the others', { skip }, async (t) => {
  const redis = new Redis(url as string)
  const prefix = `wills-${process.pid}-${Date.now()}:`
  t.teardown(async () => {
    await cleanup(redis, prefix)
    redis.disconnect()
  })
  const wills = await startBroker(t, prefix, 'node-a~run1')
  for (let i = 0; i < WILLS; i++) await wills.putWill({ id: `dev/${i}` }, willOf(`dev/${i}`))

  const lists: string[] = []
  for (const key of await redis.keys(`${prefix}*`)) if ((await redis.type(key)) === 'list') lists.push(`${key}: ${await redis.llen(key)}`)
  t.same(lists, [], 'no list holds the wills (a list is searched whole to remove one)')

  t.same(await collect(wills.streamWill({ 'node-a~run1': Date.now() })), [], "a live broker's wills are not swept")
  const swept = await collect(wills.streamWill({}))
  t.equal(swept.length, WILLS, "a dead broker's wills are all swept")
  t.same(
    swept.find((w) => w.clientId === 'dev/7'),
    { ...willOf('dev/7'), clientId: 'dev/7', brokerId: 'node-a~run1' },
    'each with its client and broker, as aedes publishes it',
  )
  const removed = await wills.delWill({ id: 'dev/7', brokerId: 'node-a~run1' })
  t.equal(removed?.topic, 'devices/dev/7/state', 'delWill answers the removed will')
  t.equal(await wills.delWill({ id: 'dev/7', brokerId: 'node-a~run1' }), null, 'and then there is none')
  for (const w of swept) await wills.delWill({ id: w.clientId, brokerId: w.brokerId })
  t.same(await collect(wills.streamWill({})), [], 'none left to sweep')
  t.same(await redis.keys(`${prefix}mqtt:will*`), [], 'and no key left behind')
})

t.test('wills an earlier version kept in its list are swept after an upgrade', { skip }, async (t) => {
  const redis = new Redis(url as string)
  const prefix = `wills-legacy-${process.pid}-${Date.now()}:`
  t.teardown(async () => {
    await cleanup(redis, prefix)
    redis.disconnect()
  })
  // As aedes-persistence-redis stored it: the key in the list `will`, the packet in msgpack.
  const require = createRequire(import.meta.url)
  const msgpack = createRequire(require.resolve('aedes-persistence-redis'))('msgpack-lite') as { encode(v: unknown): Buffer }
  const key = `will:dead~old:${encodeURIComponent('dev/old')}`
  await redis.rpush(`${prefix}mqtt:will`, key)
  await redis.set(`${prefix}mqtt:${key}`, msgpack.encode({ ...willOf('dev/old'), clientId: 'dev/old', brokerId: 'dead~old' }))

  const wills = await startBroker(t, prefix, 'node-b~run1')
  const swept = await collect(wills.streamWill({ 'node-b~run1': Date.now() }))
  t.same(
    swept.map((w) => [w.clientId, w.brokerId, w.topic]),
    [['dev/old', 'dead~old', 'devices/dev/old/state']],
    "the dead broker's will",
  )
  await wills.delWill({ id: 'dev/old', brokerId: 'dead~old' })
  t.same(await collect(wills.streamWill({})), [], 'removed like any other')
  t.equal(await redis.exists(`${prefix}mqtt:will`), 0, 'the old list is gone')
})

t.test("a CONNECT's will is this broker's: no lookup under an unknown broker, none at all when a will replaces it", { skip }, async (t) => {
  const prefix = `wills-connect-${process.pid}-${Date.now()}:`
  const redis = new Redis(url as string, { keyPrefix: `${prefix}mqtt:` })
  const plain = new Redis(url as string)
  t.teardown(async () => {
    await cleanup(plain, prefix)
    plain.disconnect()
    redis.disconnect()
  })
  // The real connection, with every command the store sends recorded (pipelined ones too).
  const sent: string[] = []
  const record = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(obj, prop, receiver) {
        const value = Reflect.get(obj, prop, receiver)
        if (typeof value !== 'function' || typeof prop !== 'string') return value
        return (...args: unknown[]) => {
          if (prop === 'pipeline') return record(value.apply(obj, args))
          if (prop !== 'exec') sent.push([prop, ...args.filter((a) => typeof a === 'string')].join(' '))
          const out = value.apply(obj, args)
          return out === obj ? receiver : out
        }
      },
    })
  const persistence = { broker: { id: 'node-c~run1' }, async setup() {} }
  const wills = withRedisWills(persistence, record(redis) as unknown as WillsConnection) as unknown as Wills & {
    delWill(client: { id: string; brokerId?: string; will?: object }): Promise<Will | null>
  }
  await wills.putWill({ id: 'dev/1' }, willOf('dev/1'))
  // aedes' CONNECT calls delWill with the client itself (no brokerId), its new will already set.
  sent.length = 0
  t.equal(await wills.delWill({ id: 'dev/1', will: willOf('dev/1') }), null)
  t.same(sent, [], 'a will about to be stored replaces the old one: no command')
  const removed = await wills.delWill({ id: 'dev/1' })
  t.equal(removed?.brokerId, 'node-c~run1', "a CONNECT without a will removes this broker's stored one")
  t.same(await plain.keys(`${prefix}mqtt:will:*`), [], 'no will left')
  t.same(
    sent.filter((c) => c.includes('undefined')),
    [],
    'no key under an undefined broker',
  )
})
