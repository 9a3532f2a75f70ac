// The retained-message tree against the MQTT 3.1.1 matching rules (section 4.7), and through a
// real broker: a late subscriber gets exactly the retained messages its filters name.
import t from 'tap'
import { RetainedTree } from '../../broker/retained.js'
import { createMqttServer, defaultLimits } from '../../broker/server.js'
import { close, connect, subscribe } from '../helpers/mqtt.js'

const packet = (topic: string, body = topic) => ({ cmd: 'publish', topic, payload: Buffer.from(body), qos: 1, retain: true })
const topics = (tree: RetainedTree, ...filters: string[]) => [...tree.match(filters)].map((p) => p.topic).sort()

t.test('matching rules', async (t) => {
  const tree = new RetainedTree()
  for (const topic of ['a', 'a/b', 'a/b/c', 'a/x/c', 'a//c', 'b/b', '$SYS/x', '/lead']) tree.store(packet(topic))
  t.equal(tree.size, 8)
  t.same(topics(tree, 'a/b'), ['a/b'], 'an exact filter names one topic')
  t.same(topics(tree, 'a/b/d'), [], 'and nothing when absent')
  t.same(topics(tree, 'a/+/c'), ['a//c', 'a/b/c', 'a/x/c'], '+ is one level, an empty one too')
  t.same(topics(tree, 'a/#'), ['a', 'a//c', 'a/b', 'a/b/c', 'a/x/c'], '# includes the parent level (4.7.1-2)')
  t.same(topics(tree, '+/b'), ['a/b', 'b/b'])
  t.same(topics(tree, '#'), ['/lead', 'a', 'a//c', 'a/b', 'a/b/c', 'a/x/c', 'b/b'], 'wildcards in the first level skip $ topics (4.7.2-1)')
  t.same(topics(tree, '+/x'), [], '+ in the first level also skips $SYS/x')
  t.same(topics(tree, '$SYS/#'), ['$SYS/x'], 'a filter naming $SYS reaches it')
  t.same(topics(tree, '+/lead'), ['/lead'], 'an empty first level is a level')
  t.same(topics(tree, 'a/b', 'a/#', 'a/+'), ['a', 'a//c', 'a/b', 'a/b/c', 'a/x/c'], 'each message once across overlapping filters')
})

t.test('replace and delete', async (t) => {
  const tree = new RetainedTree()
  tree.store(packet('d/1/state', 'online'))
  tree.store(packet('d/1/state', 'offline'))
  t.equal(tree.size, 1, 'a topic holds one message')
  t.same(
    [...tree.match(['d/1/state'])].map((p) => p.payload.toString()),
    ['offline'],
    'the newest',
  )
  tree.store(packet('d/1/config'))
  tree.store({ ...packet('d/1/state'), payload: Buffer.alloc(0) })
  t.equal(tree.size, 1, 'an empty payload deletes')
  t.same(topics(tree, 'd/#'), ['d/1/config'])
  tree.store({ ...packet('d/1/config'), payload: Buffer.alloc(0) })
  tree.store({ ...packet('never/stored'), payload: Buffer.alloc(0) })
  t.equal(tree.size, 0)
  t.same(topics(tree, '#'), [], 'emptied branches are pruned')
})

t.test('through the broker: retained messages reach late subscribers by filter', async (t) => {
  const server = await createMqttServer({ id: 'retained-test', limits: { ...defaultLimits, connectRate: 0 }, hooks: {} })
  const port = await server.listenTcp(0, '127.0.0.1')
  t.teardown(() => server.close())
  const url = `mqtt://127.0.0.1:${port}`
  const pub = await connect(url, { clientId: 'retained-pub' })
  for (const id of ['1', '2', '3']) {
    await new Promise<void>((resolve, reject) =>
      pub.publish(`devices/${id}/state`, `state ${id}`, { qos: 1, retain: true }, (err) => (err ? reject(err) : resolve())),
    )
  }
  await new Promise<void>((resolve, reject) =>
    pub.publish('devices/2/state', '', { qos: 1, retain: true }, (err) => (err ? reject(err) : resolve())),
  )
  await close(pub)

  const got = async (filter: string) => {
    const sub = await connect(url, { clientId: `retained-sub-${filter.replace(/\W/g, '')}` })
    const seen: string[] = []
    sub.on('message', (topic, payload, p) => p.retain && seen.push(`${topic}=${payload.toString()}`))
    await subscribe(sub, filter)
    await new Promise((r) => setTimeout(r, 200))
    await close(sub)
    return seen.sort()
  }
  t.same(await got('devices/1/#'), ['devices/1/state=state 1'], 'a device filter gets only its own')
  t.same(await got('devices/+/state'), ['devices/1/state=state 1', 'devices/3/state=state 3'], 'the cleared one is gone')
  t.same(await got('devices/2/#'), [], 'nothing for a cleared topic')
})
