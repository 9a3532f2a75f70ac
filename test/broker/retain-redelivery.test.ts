// [MQTT-3.3.1-9] a PUBLISH sent because it matches an established subscription has retain 0,
// whatever the flag of the message the broker received; retain 1 is only for the retained
// messages sent on a new subscription [MQTT-3.3.1-8]. aedes stored a persistent session's copy
// of a retained message as published (retain 1), so the copy resent at reconnect, or first sent
// after being queued while the client was offline, had retain 1 (Mosquitto sends retain 0 in both).
import t from 'tap'
import { sessionStore } from '../../broker/aedes-internals.js'
import { bareBroker, connectBytes, rawClient, within, type RawClient } from '../helpers/memory-mqtt.js'

type Server = Parameters<typeof rawClient>[0]

async function connected(server: Server, clientId: string, clean = true): Promise<RawClient> {
  const c = rawClient(server)
  c.write(connectBytes({ clientId, clean }))
  await within(c.next('connack'), `${clientId} CONNACK`)
  return c
}

async function publishRetained(server: Server, topic: string, payload: string) {
  const p = await connected(server, `pub-${Math.random().toString(16).slice(2)}`)
  p.send({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 1, retain: true, messageId: 7 })
  await within(p.next('puback'), 'PUBACK to the publisher')
  p.send({ cmd: 'disconnect' })
  await p.closed
}

t.test('an unacknowledged retained message is resent to a persistent session with dup 1 and retain 0', async (t) => {
  const { server } = await bareBroker(t)
  const topic = 'devices/d1/cmd'
  const sub = await connected(server, 'persistent', false)
  sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] })
  await within(sub.next('suback'), 'SUBACK')

  await publishRetained(server, topic, 'live')
  const live = await within(sub.next('publish'), 'live PUBLISH')
  t.equal(live.retain, false, 'live delivery: retain 0')
  t.equal(live.dup, false, 'live delivery: dup 0')

  // no PUBACK: the session owes it again on the next connection
  sub.send({ cmd: 'disconnect' })
  await sub.closed
  const back = await connected(server, 'persistent', false)
  const resent = await within(back.next('publish'), 'redelivered PUBLISH')
  t.equal(resent.messageId, live.messageId, 'the same packet id')
  t.equal(resent.dup, true, 'redelivery: dup 1')
  t.equal(resent.retain, false, 'redelivery: retain 0, as for the live delivery')
  back.send({ cmd: 'puback', messageId: resent.messageId })
  back.send({ cmd: 'disconnect' })
  await back.closed
})

t.test('a retained message queued while a persistent session was offline is sent at reconnect with retain 0', async (t) => {
  const { server } = await bareBroker(t)
  const topic = 'devices/d2/cmd'
  const sub = await connected(server, 'offline', false)
  sub.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 1 }] })
  await within(sub.next('suback'), 'SUBACK')
  sub.send({ cmd: 'disconnect' })
  await sub.closed

  await publishRetained(server, topic, 'queued')
  const back = await connected(server, 'offline', false)
  const queued = await within(back.next('publish'), 'queued PUBLISH')
  t.equal(queued.payload?.toString(), 'queued')
  t.equal(queued.dup, false, 'first sent: dup 0')
  t.equal(queued.retain, false, 'established subscription: retain 0')
  back.send({ cmd: 'puback', messageId: queued.messageId })
  // and only once: the retained copy is not sent again, the subscription being restored, not new
  await new Promise((r) => setTimeout(r, 100))
  t.equal(back.count('publish'), 1, 'one PUBLISH')
  back.send({ cmd: 'disconnect' })
  await back.closed
})

t.test('MQTT 5 retain-as-published: its queued copy keeps retain 1, the others get retain 0', async (t) => {
  const { server } = await bareBroker(t)
  // Our listeners speak 3.1.1 only; the split is aedes' own, so the sessions are put in its store
  // directly: one rap subscription and one plain, on the same topic.
  const store = sessionStore(server.aedes) as unknown as {
    addSubscriptions(client: { id: string }, subs: object[]): Promise<void>
    outgoingStream(client: { id: string }): AsyncIterable<{ payload?: Buffer; retain?: boolean }>
  }
  const topic = 'devices/d3/cmd'
  await store.addSubscriptions({ id: 'as-published' }, [{ topic, qos: 1, rh: 0, rap: true, nl: false }])
  await store.addSubscriptions({ id: 'plain' }, [{ topic, qos: 1, rh: 0, rap: false, nl: false }])
  const queued = async (id: string) => {
    const out = []
    for await (const p of store.outgoingStream({ id })) out.push([Buffer.from(p.payload!).toString(), p.retain])
    return out
  }
  await publishRetained(server, topic, 'r')
  // aedes writes a QoS 1 PUBACK before it publishes: the copies are stored a moment later
  for (let i = 0; i < 200 && (await queued('plain')).length + (await queued('as-published')).length < 2; i++)
    await new Promise((r) => setTimeout(r, 10))
  t.same(await queued('as-published'), [['r', true]], 'rap: as published')
  t.same(await queued('plain'), [['r', false]], 'not rap: retain 0')
})
