// In cluster mode a QoS 1 publish is queued for every persistent session subscribed to its topic,
// wherever that session is connected, or none. aedes-persistence-redis answered "who is
// subscribed" from a tree in each instance's memory holding every session of the cluster: each
// SUBSCRIBE was broadcast on $SYS/sub/add to every instance, and a starting instance read every
// stored session, so an instance's cost per connect grew with the devices on the others
// (docs/benchmarks.md "Fleet"). The subscriptions are looked up in Redis instead: nothing is
// broadcast, and what was queued must still reach the session on any instance, one that joined
// after the session subscribed included.
import t, { type Test } from 'tap'
import { createRequire } from 'node:module'
import type { MqttClient } from 'mqtt'
import { Redis } from 'ioredis'
import { redisClusterParts } from '../../broker/cluster.js'
import { candidateKeys, literalPrefix } from '../../broker/redis-subscriptions.js'
import { createMqttServer, defaultLimits, type MqttServer } from '../../broker/server.js'
import { close, connect, eventually, subscribe } from '../helpers/mqtt.js'
import { redisUrl } from '../helpers/services.js'

const url = await redisUrl()
const skip = url ? false : 'no Redis reachable (set REDIS_URL): the cluster store needs one'

type Sub = { clientId: string; topic: string; qos: number; rap?: boolean }
type Store = {
  subscriptionsByTopic(topic: string): Promise<Sub[]>
  addSubscriptions(client: { id: string }, subs: { topic: string; qos: number }[]): Promise<unknown>
  removeSubscriptions(client: { id: string }, topics: string[]): Promise<unknown>
  cleanSubscriptions(client: { id: string }): Promise<unknown>
  subscriptionsByClient(client: { id: string }): Promise<{ topic: string; qos: number }[]>
  countOffline(): Promise<{ subsCount: number; clientsCount: number }>
}

async function startBroker(
  t: Test,
  prefix: string,
  id: string,
): Promise<{ server: MqttServer; store: Store; url: string; sysSubs: string[] }> {
  const parts = redisClusterParts(url as string, prefix, () => {})
  // Every $SYS/sub/* message this instance's emitter carries (aedes-persistence-redis' broadcast).
  const sysSubs: string[] = []
  const mq = parts.mq as unknown as { on(topic: string, fn: (p: { topic: string }, cb: () => void) => void): void }
  mq.on('$SYS/sub/+', (packet, cb) => {
    sysSubs.push(packet.topic)
    cb()
  })
  const server = await createMqttServer({ id, limits: defaultLimits, hooks: {}, mq: parts.mq, persistence: parts.persistence })
  const port = await server.listenTcp(0, '127.0.0.1')
  t.teardown(async () => {
    await server.close()
    await parts.close()
  })
  return { server, store: parts.persistence as Store, url: `mqtt://127.0.0.1:${port}`, sysSubs }
}

async function cleanup(redis: Redis, prefix: string) {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length) await redis.unlink(...keys)
}

function publish(server: MqttServer, topic: string, n: number): Promise<void> {
  return new Promise((resolve, reject) =>
    server.aedes.publish(
      { cmd: 'publish', topic, payload: Buffer.from(JSON.stringify({ n })), qos: 1, retain: false, dup: false },
      (err?: Error) => (err ? reject(err) : resolve()),
    ),
  )
}

/** Connects a persistent session and collects every message it is sent, by topic. */
async function device(brokerUrl: string, id: string) {
  const client: MqttClient = await connect(brokerUrl, { clientId: id, clean: false })
  const got: string[] = []
  client.on('message', (topic, payload) => got.push(`${topic} ${(JSON.parse(payload.toString('utf8')) as { n: number }).n}`))
  return { client, got }
}

/** Waits until every instance in `to` has seen a marker sent on $SYS/sub/ through `from`: Redis delivers one connection's publishes in order, so whatever `from` broadcast before it has arrived. */
async function broadcastsSettled(from: MqttServer, ...to: { sysSubs: string[] }[]) {
  const marker = `$SYS/sub/marker-${Math.random().toString(36).slice(2)}`
  await new Promise((resolve) =>
    from.aedes.publish(
      { cmd: 'publish', topic: marker, payload: Buffer.from('{"clientId":"marker","subs":[]}'), qos: 0, retain: false, dup: false },
      resolve,
    ),
  )
  await eventually(async () => to.every((i) => i.sysSubs.includes(marker)))
  for (const i of to) i.sysSubs.splice(i.sysSubs.indexOf(marker), 1)
}

const byTopic = (subs: Sub[]) => subs.map((s) => `${s.clientId} ${s.topic} ${s.qos}`).sort()

t.test(
  "no SUBSCRIBE is broadcast to the instances, and an offline session's queue fills from any instance and follows it to another",
  { skip },
  async (t) => {
    const redis = new Redis(url as string)
    const prefix = `subs-q-${process.pid}-${Date.now()}:`
    t.teardown(async () => {
      await cleanup(redis, prefix)
      redis.disconnect()
    })
    const a = await startBroker(t, prefix, 'node-a~run2')
    const b = await startBroker(t, prefix, 'node-b~run2')

    const d1 = await device(b.url, 'dev-1')
    await subscribe(d1.client, 'devices/dev-1/cmd')
    await subscribe(d1.client, 'fleet/cmd')
    const d2 = await device(b.url, 'dev-2')
    await subscribe(d2.client, 'devices/dev-2/#')
    await broadcastsSettled(b.server, a, b)
    t.same(a.sysSubs, [], 'instance A was sent none of the subscriptions made on B')
    t.same(b.sysSubs, [], 'nor was B itself')
    t.equal(await redis.exists(`${prefix}mqtt:clients`), 0, 'and no set of every session is kept for an instance to read at start')

    await publish(a.server, 'devices/dev-1/cmd', 1)
    await eventually(async () => d1.got.includes('devices/dev-1/cmd 1'))
    t.pass('published on A, delivered live on B')

    await close(d1.client)
    await close(d2.client)
    // Started after the sessions subscribed: it never saw them, and must still queue for them.
    const c = await startBroker(t, prefix, 'node-c~run2')
    await publish(c.server, 'devices/dev-1/cmd', 2)
    await publish(a.server, 'fleet/cmd', 3)
    await publish(c.server, 'devices/dev-2/cmd/sub', 4)
    await publish(a.server, 'devices/dev-3/cmd', 5)

    const back1 = await device(c.url, 'dev-1')
    const back2 = await device(a.url, 'dev-2')
    await eventually(async () => back1.got.length >= 2 && back2.got.length >= 1)
    t.same(back1.got.sort(), ['devices/dev-1/cmd 2', 'fleet/cmd 3'], 'dev-1, offline, was queued what C and A published, and gets it on C')
    t.same(back2.got, ['devices/dev-2/cmd/sub 4'], "dev-2's wildcard matched, and it gets the message on A")
    await broadcastsSettled(a.server, a, b, c)
    t.same([...a.sysSubs, ...b.sysSubs, ...c.sysSubs], [], 'no instance was sent a subscription')
    back1.client.end(true)
    back2.client.end(true)
  },
)

t.test('subscriptionsByTopic answers what a tree of every subscription did', { skip }, async (t) => {
  const redis = new Redis(url as string)
  const prefix = `subs-m-${process.pid}-${Date.now()}:`
  t.teardown(async () => {
    await cleanup(redis, prefix)
    redis.disconnect()
  })
  const { store } = await startBroker(t, prefix, 'node-m~run1')
  await store.addSubscriptions({ id: 'x/1' }, [
    { topic: 'a/b/c', qos: 1 },
    { topic: 'a/+/c', qos: 1 },
    { topic: 'a/#', qos: 2 },
    { topic: 'a/b/c/#', qos: 1 },
    { topic: 'a/b/+', qos: 0 },
  ])
  await store.addSubscriptions({ id: 'y' }, [
    { topic: '#', qos: 1 },
    { topic: '+/b', qos: 1 },
    { topic: 'a/b', qos: 1 },
    { topic: '/lead', qos: 1 },
  ])
  t.same(
    byTopic(await store.subscriptionsByTopic('a/b/c')),
    ['x/1 a/# 2', 'x/1 a/+/c 1', 'x/1 a/b/c 1', 'x/1 a/b/c/# 1', 'y # 1'].sort(),
    'exact, + and # filters, # matching its parent level; QoS 0 left out',
  )
  t.same(byTopic(await store.subscriptionsByTopic('a/b')), ['x/1 a/# 2', 'y # 1', 'y +/b 1', 'y a/b 1'].sort(), 'a shorter topic')
  t.same(byTopic(await store.subscriptionsByTopic('a')), ['x/1 a/# 2', 'y # 1'].sort(), '# matches the level before it')
  t.same(byTopic(await store.subscriptionsByTopic('/lead')), ['y # 1', 'y /lead 1'].sort(), 'an empty first level is a level')
  t.same(byTopic(await store.subscriptionsByTopic('lead')), ['y # 1'], "and not the same as 'lead'")

  await store.addSubscriptions({ id: 'x/1' }, [{ topic: 'a/b/c', qos: 0 }])
  t.notOk(
    byTopic(await store.subscriptionsByTopic('a/b/c')).includes('x/1 a/b/c 1'),
    'a subscription downgraded to QoS 0 is no longer queued for',
  )
  await store.removeSubscriptions({ id: 'y' }, ['#', '+/b'])
  t.same(byTopic(await store.subscriptionsByTopic('a/b')), ['x/1 a/# 2', 'y a/b 1'].sort(), 'unsubscribed filters are gone')
  t.same(
    (await store.subscriptionsByClient({ id: 'y' })).map((s) => s.topic).sort(),
    ['/lead', 'a/b'],
    "the session's own list, which a resumed session restores, too",
  )
  t.same(await store.countOffline(), { subsCount: 5, clientsCount: 2 }, 'counted: 3 of x/1 still at QoS > 0, 2 of y')

  await redis.rpush(`${prefix}mqtt:outgoing:y`, 'packet:none:1')
  await store.cleanSubscriptions({ id: 'y' })
  t.same(byTopic(await store.subscriptionsByTopic('a/b')), ['x/1 a/# 2'], 'a clean session start removes every one of its filters')
  t.equal(await redis.exists(`${prefix}mqtt:outgoing:y`), 0, 'and its stored queue, as aedes-persistence-redis did')

  t.equal(literalPrefix('a/+/c'), 'subs:a/', 'a filter is filed under its levels before the first wildcard')
  t.same(candidateKeys('a/b'), ['subs:', 'subs:a/', 'subs:a/b/'], 'a topic reads the hashes of its 0..n first levels')
})

t.test('sessions an earlier version stored are queued for after an upgrade', { skip }, async (t) => {
  const redis = new Redis(url as string)
  const prefix = `subs-legacy-${process.pid}-${Date.now()}:`
  t.teardown(async () => {
    await cleanup(redis, prefix)
    redis.disconnect()
  })
  // As aedes-persistence-redis stored them: the set of every session, and each session's hash of
  // filter to msgpack (or, from its version 8, the QoS digit alone).
  const require = createRequire(import.meta.url)
  const msgpack = createRequire(require.resolve('aedes-persistence-redis'))('msgpack-lite') as { encode(v: unknown): Buffer }
  await redis.sadd(`${prefix}mqtt:clients`, 'old/1', 'old-2')
  await redis.hset(
    `${prefix}mqtt:client:${encodeURIComponent('old/1')}`,
    'devices/old/cmd',
    msgpack.encode({ topic: 'devices/old/cmd', qos: 1 }),
  )
  await redis.hset(`${prefix}mqtt:client:old-2`, 'devices/+/cmd', '1', 'devices/old/log', '0')

  const { store } = await startBroker(t, prefix, 'node-u~run1')
  t.same(
    byTopic(await store.subscriptionsByTopic('devices/old/cmd')),
    ['old-2 devices/+/cmd 1', 'old/1 devices/old/cmd 1'],
    'both sessions are found',
  )
  t.same(await store.subscriptionsByTopic('devices/old/log'), [], 'a QoS 0 filter is not queued for')
  t.equal(await redis.exists(`${prefix}mqtt:clients`), 0, "the earlier version's set is gone")
})
