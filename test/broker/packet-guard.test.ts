// The inbound checks aedes lacks (broker/packet-guard.ts), on a bare broker with raw packets so no
// client library hides what goes over the wire: U+0000 closes the connection, a SUBACK has one code
// per filter, a client holds at most so many filters, and a flood is dropped, then disconnected.
import t, { type Test } from 'tap'
import { connect as netConnect, type Socket } from 'node:net'
import mqttPacket from 'mqtt-packet'
import { createMqttServer, defaultLimits } from '../../broker/server.js'

type Raw = {
  socket: Socket
  packets: Array<Record<string, unknown>>
  closed: Promise<void>
  send(p: object): void
  next(cmd: string): Promise<Record<string, unknown>>
}

async function start(t: Test, limits: Partial<typeof defaultLimits>) {
  const server = await createMqttServer({
    id: `guard-${Math.random().toString(16).slice(2)}`,
    limits: { ...defaultLimits, connectRate: 0, ...limits },
    hooks: {},
  })
  const port = await server.listenTcp(0, '127.0.0.1')
  t.teardown(() => server.close())
  return { server, port }
}

async function raw(port: number, clientId: string): Promise<Raw> {
  const socket = netConnect(port, '127.0.0.1')
  const parser = mqttPacket.parser({ protocolVersion: 4 })
  const packets: Array<Record<string, unknown>> = []
  const waiting: Array<{ cmd: string; resolve: (p: Record<string, unknown>) => void }> = []
  parser.on('packet', (p) => {
    const packet = p as unknown as Record<string, unknown>
    const i = waiting.findIndex((w) => w.cmd === packet.cmd)
    if (i >= 0) waiting.splice(i, 1)[0]!.resolve(packet)
    else packets.push(packet)
  })
  socket.on('data', (chunk) => parser.parse(chunk))
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  const r: Raw = {
    socket,
    packets,
    closed,
    send: (p) => socket.write(mqttPacket.generate(p as mqttPacket.Packet)),
    next: (cmd) =>
      new Promise((resolve, reject) => {
        const i = packets.findIndex((p) => p.cmd === cmd)
        if (i >= 0) return resolve(packets.splice(i, 1)[0]!)
        waiting.push({ cmd, resolve })
        closed.then(() => reject(new Error(`closed before a ${cmd}`)))
      }),
  }
  await new Promise((resolve) => socket.once('connect', resolve))
  r.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId, keepalive: 30 })
  t.equal((await r.next('connack')).returnCode, 0, `${clientId} connected`)
  return r
}

const closedWithin = (r: Raw, ms: number) =>
  Promise.race([r.closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))])

t.test('U+0000 in a topic, a filter or a client id closes the connection (MQTT-1.5.3-2)', async (t) => {
  const { server, port } = await start(t, {})
  const publish = await raw(port, 'nul-publish')
  publish.send({ cmd: 'publish', topic: 'a/\u0000/b', payload: 'x', qos: 0 })
  t.ok(await closedWithin(publish, 2000), 'a PUBLISH topic')
  const sub = await raw(port, 'nul-subscribe')
  sub.send({
    cmd: 'subscribe',
    messageId: 1,
    subscriptions: [
      { topic: 'ok/topic', qos: 0 },
      { topic: 'x\u0000', qos: 0 },
    ],
  })
  t.ok(await closedWithin(sub, 2000), 'a SUBSCRIBE filter')
  t.equal(sub.packets.filter((p) => p.cmd === 'suback').length, 0, 'and it was not answered')
  const socket = netConnect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  const answered: Buffer[] = []
  socket.on('data', (c) => answered.push(c))
  socket.write(
    mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'bad\u0000id', keepalive: 30 }),
  )
  await gone
  t.equal(Buffer.concat(answered).length, 0, 'a CONNECT client id: closed without a CONNACK')
  t.equal(server.guardStats.nulClosed, 3)
  const fine = await raw(port, 'still-fine')
  fine.send({ cmd: 'pingreq' })
  t.ok(await fine.next('pingresp'), 'others are unaffected')
  fine.socket.end()
})

t.test('a SUBSCRIBE naming a filter twice gets one return code per filter (MQTT-3.8.4-5)', async (t) => {
  const { port } = await start(t, {})
  const c = await raw(port, 'dupes')
  c.send({
    cmd: 'subscribe',
    messageId: 7,
    subscriptions: [
      { topic: 'a/b', qos: 0 },
      { topic: 'c/#', qos: 1 },
      { topic: 'a/b', qos: 1 },
    ],
  })
  const suback = await c.next('suback')
  t.equal(suback.messageId, 7)
  t.same(suback.granted, [1, 1, 1], 'three codes; the duplicate has the QoS of the subscription that stands (the last)')
  c.send({ cmd: 'subscribe', messageId: 8, subscriptions: [{ topic: 'x', qos: 0 }] })
  t.same((await c.next('suback')).granted, [0], 'a later SUBSCRIBE is answered as usual')
  c.socket.end()
})

t.test('a client holds at most maxSubscriptions filters; past it each is refused with 0x80', async (t) => {
  const { server, port } = await start(t, { maxSubscriptions: 3 })
  const c = await raw(port, 'capped')
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: ['f/1', 'f/2', 'f/2', 'f/3', 'f/4', 'f/4'].map((topic) => ({ topic, qos: 0 })) })
  t.same((await c.next('suback')).granted, [0, 0, 0, 0, 0x80, 0x80], 'three distinct filters granted, the fourth refused (twice)')
  c.send({
    cmd: 'subscribe',
    messageId: 2,
    subscriptions: [
      { topic: 'f/1', qos: 1 },
      { topic: 'f/5', qos: 0 },
    ],
  })
  t.same((await c.next('suback')).granted, [1, 0x80], 'a held filter may change its QoS; a new one is refused')
  c.send({ cmd: 'unsubscribe', messageId: 3, unsubscriptions: ['f/2'] })
  await c.next('unsuback')
  c.send({ cmd: 'subscribe', messageId: 4, subscriptions: [{ topic: 'f/5', qos: 0 }] })
  t.same((await c.next('suback')).granted, [0], 'after an UNSUBSCRIBE there is room again')
  t.equal(server.guardStats.subscriptionsCapped, 3)
  c.socket.end()
})

t.test('inbound rate: a burst passes, the excess is dropped, a flood that persists is disconnected', async (t) => {
  const { server, port } = await start(t, { inboundRate: 50, inboundBurst: 20, inboundStrikeWindowMs: 200 })
  const sub = await raw(port, 'listener')
  sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'flood/#', qos: 0 }] })
  await sub.next('suback')
  const flood = await raw(port, 'flooder')
  for (let i = 0; i < 100; i++) flood.send({ cmd: 'publish', topic: 'flood/x', payload: String(i), qos: 1, messageId: i + 1 })
  const acks = await new Promise<number>((resolve) => {
    const count = () => flood.packets.filter((p) => p.cmd === 'puback').length
    const timer = setInterval(() => count() >= 100 && (clearInterval(timer), resolve(count())), 20)
  })
  t.equal(acks, 100, 'every QoS 1 message is acknowledged (3.1.1 has no negative PUBACK)')
  // Every message is either delivered or counted as dropped: wait for both to add up (a busy
  // machine delivers later), rather than for a fixed time.
  const deliveredCount = () => sub.packets.filter((p) => p.cmd === 'publish').length
  for (let waited = 0; deliveredCount() + server.guardStats.rateDropped < 100 && waited < 10_000; waited += 20)
    await new Promise((r) => setTimeout(r, 20))
  const delivered = deliveredCount()
  t.ok(delivered >= 20 && delivered < 40, `about the burst was delivered (${delivered} of 100)`)
  t.equal(server.guardStats.rateDropped, 100 - delivered, 'the rest was dropped and counted')
  t.equal(flood.socket.destroyed, false, 'one burst does not disconnect')

  // Keep it up for more than three windows.
  let sending = true
  const pump = (async () => {
    for (let i = 0; sending && !flood.socket.destroyed; i++) {
      flood.send({ cmd: 'publish', topic: 'flood/x', payload: 'y', qos: 0 })
      if (i % 50 === 0) await new Promise((r) => setTimeout(r, 5))
    }
  })()
  t.ok(await closedWithin(flood, 5000), 'a flood over three windows is disconnected')
  sending = false
  await pump
  t.equal(server.guardStats.rateClosed, 1)
  sub.send({ cmd: 'pingreq' })
  t.ok(await sub.next('pingresp'), 'the listener is unaffected')
  sub.socket.end()
})
