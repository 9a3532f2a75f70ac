// The bytes of every PUBLISH each subscriber receives. aedes is patched (patches/aedes+1.2.0.patch,
// lib/publish-encoding.js) to encode a message once and patch each subscriber's copy with its own
// packet id and first byte (QoS, dup, retain): a wrong patch sends one subscriber another's id, the
// publisher's QoS instead of its subscription's, or a flag that belongs to another delivery. Each
// packet is compared with mqtt-packet's own encoding of what that subscriber should get.
import t from 'tap'
import type { Aedes } from 'aedes'
import mqttPacket from 'mqtt-packet'
import { connectedClients } from '../../broker/aedes-internals.js'
import { bareBroker, connectBytes, rawClient, within, type RawClient } from '../helpers/memory-mqtt.js'

type Encoder = { writePublish(packet: object, stream: { write(b: Buffer): boolean }): boolean | undefined }

/** The PUBLISH packets in `bytes`, each as the exact bytes it arrived as. */
function publishFrames(bytes: Buffer): Buffer[] {
  const out: Buffer[] = []
  let at = 0
  while (at < bytes.length) {
    let length = 0
    let mult = 1
    let i = at + 1
    for (;;) {
      const b = bytes[i++]!
      length += (b & 0x7f) * mult
      mult *= 128
      if (b < 128) break
    }
    if (bytes[at]! >> 4 === 3) out.push(bytes.subarray(at, i + length))
    at = i + length
  }
  return out
}

const expected = (o: { topic: string; payload: Buffer; qos: 0 | 1 | 2; messageId?: number; retain?: boolean; dup?: boolean }) =>
  mqttPacket.generate({ cmd: 'publish', retain: false, dup: false, ...o, ...(o.qos === 0 ? { messageId: undefined } : {}) })

const publish = (aedes: Aedes, packet: object) =>
  new Promise<void>((resolve, reject) => aedes.publish(packet as never, (err?: Error | null) => (err ? reject(err) : resolve())))

/** The broker's next packet id for this client (aedes numbers each client's packets from a random start). */
const nextId = (aedes: Aedes, clientId: string) => (connectedClients(aedes)[clientId] as unknown as { _nextId: number })._nextId

async function connected(server: Parameters<typeof rawClient>[0], clientId: string, clean = true): Promise<RawClient> {
  const c = rawClient(server)
  c.write(connectBytes({ clientId, clean }))
  await within(c.next('connack'), `${clientId} CONNACK`)
  return c
}

async function subscribed(c: RawClient, topic: string, qos: 0 | 1 | 2) {
  c.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos }] })
  await within(c.next('suback'), 'SUBACK')
}

const waitFor = async (c: RawClient, n: number) => {
  for (let i = 0; i < 200 && c.count('publish') < n; i++) await new Promise((r) => setTimeout(r, 10))
}

t.test('the encoder writes what mqtt-packet writes, for every QoS, flag, id and payload size', async (t) => {
  const enc = (await import(new URL('../../node_modules/aedes/lib/publish-encoding.js', import.meta.url).href)) as Encoder
  const topics = ['fleet/cmd', 'devices/é/🙂', '']
  const payloads = [Buffer.alloc(0), Buffer.from('{"hello":1}'), Buffer.alloc(127, 1), Buffer.alloc(5000, 2), Buffer.alloc(20_000, 3)]
  let counter = 0
  let checked = 0
  const wrong: string[] = []
  for (const topic of topics)
    for (const payload of payloads) {
      counter += 1
      // one message (one counter) written at every QoS and flag in turn, as to many subscribers
      for (const qos of [0, 1, 2] as const)
        for (const dup of [false, true])
          for (const retain of [false, true])
            for (const messageId of qos ? [1, 300, 65535] : [undefined]) {
              const packet = { cmd: 'publish', topic, payload, qos, dup, retain, messageId, brokerId: 'b', brokerCounter: counter }
              const chunks: Buffer[] = []
              const result = enc.writePublish(packet, { write: (b) => chunks.push(b) > 0 })
              const want = mqttPacket.generate({ cmd: 'publish', topic, payload, qos, dup, retain, messageId })
              checked += 1
              if (result !== true || !Buffer.concat(chunks).equals(want))
                wrong.push(`qos ${qos} dup ${dup} retain ${retain} id ${messageId} topic "${topic}" ${payload.length} bytes`)
            }
    }
  t.same(wrong, [], `${checked} packets, each as mqtt-packet encodes it (and the stream's answer returned)`)
  const none = { write: () => t.fail('nothing is written for a packet left to mqtt-packet') }
  t.equal(enc.writePublish({ cmd: 'publish', topic: 't', payload: 'a string', qos: 0 }, none as never), undefined, 'a string payload')
  t.equal(
    enc.writePublish({ cmd: 'publish', topic: 't', payload: Buffer.alloc(1), qos: 1 }, none as never),
    undefined,
    'QoS 1 without an id',
  )
  t.equal(
    enc.writePublish({ cmd: 'publish', topic: 't', payload: Buffer.alloc(1), qos: 3, messageId: 1 }, none as never),
    undefined,
    'QoS 3',
  )
})

t.test('subscribers of one message: each its own packet id, its subscription’s QoS, retain cleared', async (t) => {
  const { server } = await bareBroker(t)
  const subs: Array<{ id: string; qos: 0 | 1 | 2; c?: RawClient }> = [
    { id: 'sub-q0', qos: 0 },
    { id: 'sub-q1', qos: 1 },
    { id: 'sub-q2-a', qos: 2 },
    { id: 'sub-q2-b', qos: 2 },
  ]
  for (const s of subs) {
    s.c = await connected(server, s.id)
    await subscribed(s.c, 'fleet/cmd', s.qos)
  }
  const ids = new Map(subs.map((s) => [s.id, nextId(server.aedes, s.id)]))
  const small = Buffer.from('{"command":"identify"}')
  const large = Buffer.alloc(6000, 7)
  // published in one turn: the two messages' deliveries interleave on every socket
  await Promise.all([
    publish(server.aedes, { cmd: 'publish', topic: 'fleet/cmd', payload: small, qos: 2, retain: true }),
    publish(server.aedes, { cmd: 'publish', topic: 'fleet/cmd', payload: large, qos: 2, retain: false }),
  ])
  for (const s of subs) {
    await waitFor(s.c!, 2)
    const frames = publishFrames(s.c!.received())
    t.equal(frames.length, 2, `${s.id}: two messages`)
    const id = ids.get(s.id)!
    // the retained one is stored before it is sent, so the two may arrive in either order; ids
    // follow the order of sending
    frames.forEach((frame, k) => {
      const payload = frame.length > large.length ? large : small
      const want = expected({ topic: 'fleet/cmd', payload, qos: s.qos, messageId: id + k })
      t.ok(frame.equals(want), `${s.id}: ${payload.length} bytes, id ${id + k}, QoS ${s.qos}, retain 0`)
    })
  }
})

t.test('a redelivery has dup 1 and its first id; a retained message has retain 1 for a new subscriber only', async (t) => {
  const { server } = await bareBroker(t)
  const live = await connected(server, 'live')
  await subscribed(live, 'devices/d1/cmd', 1)
  const liveId = nextId(server.aedes, 'live')
  const gone = await connected(server, 'gone', false)
  await subscribed(gone, 'devices/d1/cmd', 1)
  const goneId = nextId(server.aedes, 'gone')
  const queued = Buffer.from('queued')
  await publish(server.aedes, { cmd: 'publish', topic: 'devices/d1/cmd', payload: queued, qos: 1, retain: false })
  await waitFor(live, 1)
  await waitFor(gone, 1)
  t.ok(
    publishFrames(live.received())[0]?.equals(expected({ topic: 'devices/d1/cmd', payload: queued, qos: 1, messageId: liveId })),
    'live: its id',
  )
  t.ok(
    publishFrames(gone.received())[0]?.equals(expected({ topic: 'devices/d1/cmd', payload: queued, qos: 1, messageId: goneId })),
    'persistent: its id, dup 0',
  )

  // not acknowledged: the session resends it on its next connection
  gone.send({ cmd: 'disconnect' })
  await gone.closed
  const back = await connected(server, 'gone', false)
  await waitFor(back, 1)
  const resent = expected({ topic: 'devices/d1/cmd', payload: queued, qos: 1, messageId: goneId, dup: true })
  t.ok(publishFrames(back.received())[0]?.equals(resent), 'resent with dup 1 and the id it was first sent with')

  const retained = Buffer.from('retained')
  await publish(server.aedes, { cmd: 'publish', topic: 'devices/d1/cmd', payload: retained, qos: 1, retain: true })
  await waitFor(live, 2)
  const live2 = expected({ topic: 'devices/d1/cmd', payload: retained, qos: 1, messageId: liveId + 1 })
  t.ok(publishFrames(live.received())[1]?.equals(live2), 'a subscriber when it is published: retain 0')
  const late = await connected(server, 'late')
  const lateId = nextId(server.aedes, 'late')
  await subscribed(late, 'devices/d1/cmd', 1)
  await waitFor(late, 1)
  const late1 = expected({ topic: 'devices/d1/cmd', payload: retained, qos: 1, messageId: lateId, retain: true })
  t.ok(publishFrames(late.received())[0]?.equals(late1), 'a new subscriber: retain 1')
  // the same payload again, live and at QoS 0: the retained copy's flag and id did not stick
  await publish(server.aedes, { cmd: 'publish', topic: 'devices/d1/cmd', payload: retained, qos: 0 })
  await waitFor(late, 2)
  t.ok(publishFrames(late.received())[1]?.equals(expected({ topic: 'devices/d1/cmd', payload: retained, qos: 0 })), 'then QoS 0, retain 0')
})
