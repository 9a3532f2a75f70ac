// The ten scenarios of the Eclipse Paho MQTT 3.1.1 interoperability suite (client_test.py in
// eclipse/paho.mqtt.testing: basic, retained messages, offline queueing, zero-length client id,
// overlapping subscriptions, keepalive, redelivery on reconnect, subscribe failure, $-topics,
// unsubscribe), written from the suite's public description with its topics, client ids and
// expected outcomes, run against the standalone broker without an ACL and with the ACL the suite
// expects (broker/paho.acl: everything open but test/nosubscribe). The suite itself is Python and
// on no registry this project installs from.
import t, { type Test } from 'tap'
import type { MqttClient, IClientOptions } from 'mqtt'
import { loadAcl } from '../../broker/acl.js'
import { createStandaloneBroker } from '../../broker/standalone-broker.js'
import { close, connect, subackCodes, subscribe } from '../helpers/mqtt.js'
import { connectBytes, rawClient } from '../helpers/memory-mqtt.js'

const topics = ['TopicA', 'TopicA/B', 'Topic/C', 'TopicA/C', '/TopicA'] as const
const wildtopics = ['TopicA/+', '+/C', '#', '/#', '/+', '+/+', 'TopicA/#'] as const
const nosubscribe = 'test/nosubscribe'
const credentials = { username: 'myusername', password: 'mypassword' }

type Got = { topic: string; payload: string; qos: number; retain: boolean }

const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms))

async function suite(t: Test, withAcl: boolean) {
  const acl = withAcl ? await loadAcl(new URL('../../broker/paho.acl', import.meta.url).pathname) : undefined
  const server = await createStandaloneBroker({ allowAnonymous: true, users: new Map(), acl })
  t.teardown(() => server.close())
  const url = `mqtt://127.0.0.1:${await server.listenTcp(0, '127.0.0.1')}`
  const clients: MqttClient[] = []
  t.teardown(() => Promise.all(clients.map((c) => c.endAsync(true))))
  const client = async (clientId: string, opts: IClientOptions = {}) => {
    const c = await connect(url, { clientId, ...credentials, ...opts })
    clients.push(c)
    return c
  }
  const recording = (c: MqttClient) => {
    const got: Got[] = []
    c.on('message', (topic, payload, packet) =>
      got.push({ topic, payload: payload.toString('utf8'), qos: packet.qos, retain: packet.retain }),
    )
    return got
  }
  /** What client_test.py's cleanup does: a clean session for each client id, every retained message cleared. */
  const cleanup = async () => {
    for (const id of ['myclientid', 'myclientid2']) await close(await connect(url, { clientId: id, clean: true, ...credentials }))
    const c = await client('clean retained')
    const stale: string[] = []
    c.on('message', (topic, _p, packet) => packet.retain && stale.push(topic))
    await subscribe(c, '#', 0)
    await settle()
    for (const topic of stale) await c.publishAsync(topic, Buffer.alloc(0), { qos: 0, retain: true })
    await close(c)
  }

  t.test('basic', async (t) => {
    await cleanup()
    const a = await client('myclientid')
    const got = recording(a)
    t.equal(await subscribe(a, topics[0], 2), 2)
    for (const qos of [0, 1, 2] as const) await a.publishAsync(topics[0], `qos ${qos}`, { qos })
    await settle()
    t.same(got.map((m) => m.payload).sort(), ['qos 0', 'qos 1', 'qos 2'], 'three messages back')
  })

  t.test('retained messages', async (t) => {
    await cleanup()
    const a = await client('myclientid')
    for (const [i, qos] of [0, 1, 2].entries()) await a.publishAsync(topics[i + 1]!, `qos ${qos}`, { qos: qos as 0 | 1 | 2, retain: true })
    await settle()
    const got = recording(a)
    await subscribe(a, wildtopics[5], 2)
    await settle()
    t.equal(got.length, 3, 'three retained messages on +/+')
    t.ok(
      got.every((m) => m.retain),
      'each with the retain flag',
    )
    for (let i = 1; i <= 3; i++) await a.publishAsync(topics[i]!, Buffer.alloc(0), { qos: 0, retain: true })
    await settle()
    const b = await client('myclientid2')
    const later = recording(b)
    await subscribe(b, wildtopics[5], 2)
    await settle()
    t.same(later, [], 'cleared: none on a new subscription')
  })

  t.test('offline message queueing', async (t) => {
    await cleanup()
    const a = await client('myclientid', { clean: false })
    t.equal(await subscribe(a, wildtopics[5], 2), 2, '+/+ granted (QoS 2)')
    await close(a)
    const b = await client('myclientid2')
    await b.publishAsync(topics[1], 'qos 0', { qos: 0 })
    await b.publishAsync(topics[2], 'qos 1', { qos: 1 })
    await b.publishAsync(topics[3], 'qos 2', { qos: 2 })
    await settle()
    const again = (await import('mqtt')).default.connect(url, { clientId: 'myclientid', clean: false, reconnectPeriod: 0, ...credentials })
    clients.push(again)
    const got = recording(again)
    await new Promise((resolve) => again.once('connect', resolve))
    await settle()
    t.ok(got.length === 2 || got.length === 3, `2 or 3 messages queued while offline (got ${got.length})`)
    t.ok(got.some((m) => m.payload === 'qos 1') && got.some((m) => m.payload === 'qos 2'), 'the QoS 1 and 2 ones among them')
  })

  t.test('zero-length client id', async (t) => {
    await cleanup()
    const ok = await connect(url, { clientId: '', clean: true, ...credentials })
    t.equal(ok.connected, true, 'accepted with a clean session')
    await close(ok)
    // By hand: mqtt.js will not send an empty client id with a persistent session.
    const raw = rawClient(server)
    raw.write(connectBytes({ clientId: '', clean: false, ...credentials }))
    t.equal((await raw.next('connack')).returnCode, 2, 'refused with a persistent session: CONNACK 2, identifier rejected')
  })

  t.test('overlapping subscriptions', async (t) => {
    await cleanup()
    const a = await client('myclientid')
    const got = recording(a)
    t.same(await subackCodes(a, [wildtopics[6], wildtopics[0]], 2), [2, 2])
    await a.publishAsync(topics[3], 'overlapping topic filters', { qos: 2 })
    await settle()
    t.ok(got.length === 1 || got.length === 2, `delivered once or once per filter (${got.length})`)
    t.ok(
      got.every((m) => m.topic === topics[3]),
      'on the topic published',
    )
  })

  t.test('keepalive', async (t) => {
    await cleanup()
    const b = await client('myclientid2')
    const got = recording(b)
    await subscribe(b, topics[4], 2)
    // A client that sends nothing after CONNECT (keepalive 1 s) and sets a will.
    const silent = rawClient(server)
    silent.send({
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: 4,
      clean: true,
      clientId: 'myclientid',
      keepalive: 1,
      will: { topic: topics[4], payload: Buffer.from('keepalive expiry'), qos: 1, retain: false },
    })
    t.equal((await silent.next('connack')).returnCode, 0)
    await silent.closed
    t.pass('the broker closed the silent client after one and a half keepalives')
    await settle()
    t.same(
      got.map((m) => m.payload),
      ['keepalive expiry'],
      'and published its will',
    )
  })

  t.test('redelivery on reconnect', async (t) => {
    await cleanup()
    // A client that acknowledges nothing, with a persistent session.
    const a = rawClient(server)
    a.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: false, clientId: 'myclientid', keepalive: 60 })
    t.equal((await a.next('connack')).returnCode, 0)
    a.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: wildtopics[6], qos: 2 }] })
    t.same((await a.next('suback')).granted, [2])
    const b = await client('myclientid2')
    await b.publishAsync(topics[1], '', { qos: 1 })
    await b.publishAsync(topics[3], '', { qos: 2 })
    await a.next('publish')
    await a.next('publish')
    a.send({ cmd: 'disconnect' })
    await a.closed
    const again = rawClient(server)
    again.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: false, clientId: 'myclientid', keepalive: 60 })
    t.equal((await again.next('connack')).sessionPresent, true)
    const redelivered = [await again.next('publish'), await again.next('publish')]
    t.same(redelivered.map((p) => p.topic).sort(), [topics[1], topics[3]].sort(), 'both unacknowledged messages again')
    t.ok(
      redelivered.every((p) => p.dup === true),
      'marked as duplicates',
    )
    again.send({ cmd: 'disconnect' })
  })

  t.test('subscribe failure', async (t) => {
    await cleanup()
    const a = await client('myclientid')
    const codes = await subackCodes(a, [nosubscribe], 2)
    t.same(codes, withAcl ? [0x80] : [2], withAcl ? 'test/nosubscribe refused: 0x80' : 'without an ACL, granted')
  })

  t.test('$-topics', async (t) => {
    await cleanup()
    const a = await client('myclientid')
    const got = recording(a)
    await subscribe(a, wildtopics[5], 2)
    await a.publishAsync(`$${topics[1]}`, '', { qos: 1 })
    await settle()
    t.same(got, [], '+/+ does not match $TopicA/B')
  })

  t.test('unsubscribe', async (t) => {
    await cleanup()
    const a = await client('myclientid')
    const got = recording(a)
    for (const topic of [topics[1], topics[2], topics[3]]) await subscribe(a, topic, 2)
    await a.unsubscribeAsync(topics[1])
    await a.unsubscribeAsync(topics[2])
    const b = await client('myclientid2')
    for (const topic of [topics[1], topics[2], topics[3]]) await b.publishAsync(topic, '', { qos: 1 })
    await settle()
    t.same(
      got.map((m) => m.topic),
      [topics[3]],
      'only the topic still subscribed',
    )
  })

  if (withAcl)
    t.test('a granted wildcard that also reaches a denied topic: granted, and the denied messages are not delivered', async (t) => {
      await cleanup()
      const a = await client('myclientid', { clean: false })
      const got = recording(a)
      t.same(await subackCodes(a, ['#', 'test/+'], 1), [1, 1], '# and test/+ granted beside the deny')
      const b = await client('myclientid2')
      await b.publishAsync('test/allowed', 'a', { qos: 1 })
      await b.publishAsync(nosubscribe, 'secret', { qos: 1 })
      await b.publishAsync('test/allowed', 'b', { qos: 1 })
      await settle()
      t.same([...new Set(got.map((m) => m.payload))], ['a', 'b'], 'the allowed messages (once per filter at most), in order')
      t.notOk(
        got.some((m) => m.topic === nosubscribe),
        'nothing on test/nosubscribe',
      )
      // Dropping the denied message took only it out of the stored session, nothing still being delivered.
      await close(a)
      await b.publishAsync('test/allowed', 'c', { qos: 1 })
      const again = (await import('mqtt')).default.connect(url, {
        clientId: 'myclientid',
        clean: false,
        reconnectPeriod: 0,
        ...credentials,
      })
      clients.push(again)
      const later = recording(again)
      await new Promise((resolve) => again.once('connect', resolve))
      await settle()
      t.same([...new Set(later.map((m) => m.payload))], ['c'], 'the next session gets what was queued for it, nothing denied')
    })
}

t.test('the Paho 3.1.1 interoperability scenarios, standalone broker without an ACL', (t) => suite(t, false))
t.test('the Paho 3.1.1 interoperability scenarios, standalone broker with the suite’s ACL (broker/paho.acl)', (t) => suite(t, true))
