// The limits broker/server.ts adds to aedes, on a bare broker over in-memory streams (no sockets,
// no app): malformed or oversized packets close only their own connection, keepalive and client id
// rules answer CONNACK 2, and the queue, in-flight and connection-rate bounds hold. How the device
// side reports such closes (events with reasons) is in limits.test.ts, against the app.
import t, { type Test } from 'tap'
import type { MqttServer } from '../../broker/server.js'
import { bareBroker, connectBytes, rawClient, remainingLength, within, type RawClient } from '../helpers/memory-mqtt.js'

async function connected(t: Test, server: MqttServer, clientId: string, remoteAddress?: string): Promise<RawClient> {
  const c = rawClient(server, remoteAddress)
  c.write(connectBytes({ clientId }))
  t.equal((await c.next('connack')).returnCode, 0, `${clientId} connected`)
  return c
}

/** A client subscribed to `bystander/cmd`, to show the broker keeps serving others. */
async function bystander(t: Test, server: MqttServer) {
  const c = await connected(t, server, 'bystander', '198.51.100.7')
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'bystander/cmd', qos: 0 }] })
  await c.next('suback')
  let n = 0
  return async function stillServed(t: Test) {
    const body = `still served ${++n}`
    await new Promise<void>((resolve) =>
      server.aedes.publish({ cmd: 'publish', topic: 'bystander/cmd', payload: Buffer.from(body), qos: 0, retain: false, dup: false }, () =>
        resolve(),
      ),
    )
    t.equal(String((await c.next('publish')).payload), body, 'the bystander is still served')
    t.equal(c.isClosed(), false)
  }
}

const returnCode = async (c: RawClient) => (await c.next('connack')).returnCode

t.test('malformed bytes close only that connection', async (t) => {
  const { server } = await bareBroker(t)
  const stillServed = await bystander(t, server)
  const garbage: Array<[string, Buffer]> = [
    ['reserved packet type 0', Buffer.from([0x00, 0x00])],
    ['an HTTP request', Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')],
    ['a remaining length over four bytes', Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0x7f])],
    [
      'a CONNECT with a bad protocol name',
      Buffer.from(connectBytes({ clientId: 'xx' }).toString('latin1').replace('MQTT', 'MQTX'), 'latin1'),
    ],
    ['random bytes', Buffer.from(Array.from({ length: 256 }, (_, i) => (i * 151 + 7) % 256))],
  ]
  for (const [what, bytes] of garbage) {
    const c = rawClient(server)
    c.write(bytes)
    await within(c.closed, 'c closed')
    const b = c.received()
    t.notOk(b.length >= 4 && b[0] === 0x20 && b[3] === 0, `${what}: closed without a session`)
  }
  await stillServed(t)

  const c = await connected(t, server, 'talks-garbage')
  c.write(Buffer.from([0x00, 0x00, 0xde, 0xad]))
  await within(c.closed, 'c closed')
  t.pass('garbage after CONNECT closes that connection')
  await stillServed(t)
})

t.test('a packet over the size limit closes its connection as soon as its header announces it', async (t) => {
  const { server, rejected } = await bareBroker(t, { maxPacketSize: 2048 })
  const stillServed = await bystander(t, server)
  const watcher = await connected(t, server, 'watcher')
  watcher.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'size/test', qos: 0 }] })
  await watcher.next('suback')
  const pub = await connected(t, server, 'publisher')
  const publish = (bytes: number) =>
    pub.send({ cmd: 'publish', topic: 'size/test', payload: Buffer.alloc(bytes, 'x'), qos: 0, retain: false, dup: false })
  publish(1600)
  t.equal((await watcher.next('publish')).length, 1600 + 2 + 'size/test'.length, 'a packet under the limit is delivered')
  publish(10 * 1024)
  await within(pub.closed, 'pub closed')
  t.pass('10 KB: closed')
  await stillServed(t)
  t.equal(watcher.count('publish'), 1, 'and nothing of it was delivered')

  // Only the fixed header of a 20 MB PUBLISH: closed without waiting for the bytes.
  const big = await connected(t, server, 'announces-20-mb')
  big.write(Buffer.from([0x30, ...remainingLength(20 * 1024 * 1024)]))
  await within(big.closed, 'big closed')
  t.pass('a 20 MB announcement closes the connection at once')
  t.equal(rejected.filter((r) => r === 'packet too large').length, 2, 'both refusals reported')
  await stillServed(t)
})

t.test('keepalive 0 or over the maximum is refused with "identifier rejected"', async (t) => {
  // MQTT 3.1.1 cannot tell a client to use another keepalive; Mosquitto's max_keepalive answers 2 too.
  const { server } = await bareBroker(t, { keepaliveLimit: 3600 })
  for (const keepalive of [0, 3601, 65535]) {
    const c = rawClient(server)
    c.write(connectBytes({ clientId: `ka-${keepalive}`, keepalive }))
    t.equal(await returnCode(c), 2, `keepalive ${keepalive}: return code 2`)
    await within(c.closed, 'c closed')
  }
  const ok = rawClient(server)
  ok.write(connectBytes({ clientId: 'ka-max', keepalive: 3600 }))
  t.equal(await returnCode(ok), 0, 'the maximum itself is accepted')
})

t.test('an empty client id needs a clean session (MQTT-3.1.3-8)', async (t) => {
  const { server } = await bareBroker(t)
  const persistent = rawClient(server)
  persistent.write(connectBytes({ clientId: '', clean: false }))
  t.equal(await returnCode(persistent), 2, 'persistent: identifier rejected')
  await within(persistent.closed, 'persistent closed')
  const clean = rawClient(server)
  clean.write(connectBytes({ clientId: '', clean: true }))
  const ack = await clean.next('connack')
  t.equal(ack.returnCode, 0, 'clean: accepted, the broker assigns an id')
  t.equal(ack.sessionPresent, false)
})

t.test('packets sent behind CONNECT: the queue limit holds them, one more closes the connection', async (t) => {
  // Authentication that takes a moment, as a database lookup does, so the pings arrive before CONNACK.
  const { server } = await bareBroker(
    t,
    { queueLimit: 3 },
    {
      authenticate: (_client, _user, _password, done) => {
        setTimeout(() => done(null, true), 20)
      },
    },
  )
  const ping = Buffer.from([0xc0, 0x00])
  const held = rawClient(server)
  held.write(Buffer.concat([connectBytes({ clientId: 'held' }), ping, ping, ping]))
  t.equal(await returnCode(held), 0)
  for (let i = 0; i < 3; i++) await held.next('pingresp')
  t.pass('the three queued PINGREQs are answered')
  const over = rawClient(server)
  over.write(Buffer.concat([connectBytes({ clientId: 'over' }), ping, ping, ping, ping, ping]))
  await within(over.closed, 'over closed')
  t.notOk(over.received().includes(0xd0), 'five: closed, no PINGRESP')
})

t.test('inbound QoS 2 awaiting PUBREL: the in-flight limit holds, one more closes the connection', async (t) => {
  const { server } = await bareBroker(t, { maxInflight: 2 })
  const c = await connected(t, server, 'qos2')
  const publish = (messageId: number) =>
    c.send({ cmd: 'publish', topic: 'up/status', payload: Buffer.from('{}'), qos: 2, messageId, retain: false, dup: false })
  publish(1)
  publish(2)
  await c.next('pubrec')
  await c.next('pubrec')
  t.equal(c.isClosed(), false, 'two in flight are fine (PUBREC each)')
  publish(3)
  await within(c.closed, 'c closed')
  t.pass('the third without PUBREL closes the connection')
})

t.test('connections per address: over the rate, closed before CONNECT is read; other addresses still admitted', async (t) => {
  const { server, rejected } = await bareBroker(t, { connectRate: 3 })
  for (let i = 0; i < 3; i++) await connected(t, server, `same-${i}`, '203.0.113.5')
  const fourth = rawClient(server, '203.0.113.5')
  fourth.write(connectBytes({ clientId: 'same-3' }))
  await within(fourth.closed, 'fourth closed')
  t.equal(fourth.received().length, 0, 'the fourth: closed without a CONNACK')
  t.same(rejected, ['connection rate'], 'and reported')
  await connected(t, server, 'elsewhere', '203.0.113.6')
})
