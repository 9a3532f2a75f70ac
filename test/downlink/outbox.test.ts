// The durable downlink inside one service: what a new session is sent again (only what is still
// pending, never an older config or image a newer one replaced), the bound per device with its
// event, and how acknowledgements mark messages delivered. Uplink that names nothing real is
// counted, not stored.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { MqttClient } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { createOutbox, outboxRepository } from '../../src/downlink/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

type Message = { topic: string; body: Record<string, unknown> }
type Downlink = { messages: Array<{ seq: number; kind: string; status: string }> }
type EventRecord = { type: string; data: Record<string, unknown> }

const KINDS = ['prompt', 'image', 'config', 'cmd'] as const

async function setup(t: Parameters<typeof startApp>[0], env: Record<string, string> = {}) {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', ...env } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('outbox'))
  const api = async <T>(method: string, path: string, body?: unknown) => {
    const res = await appFetch(`${svc.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
    return { status: res.status, body: (await res.json()) as T }
  }
  return { svc, token, api }
}

/**
 * One app for the tests that read only their own device's messages and events (an app start is
 * about 1.2 s of CPU); the bound's test keeps one of its own: it sets DOWNLINK_MAX_PER_DEVICE and
 * counts what a sweep drops across the whole database.
 */
let shared: Awaited<ReturnType<typeof setup>>
t.before(async () => {
  shared = await setup(t)
})

/** A device session that records what arrives; subscribes to every downlink topic when the session is new. */
async function session(svc: TestApp, dev: PairedDevice, clean: boolean): Promise<{ client: MqttClient; seen: Message[] }> {
  const client = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean })
  const seen: Message[] = []
  client.on('message', (topic, payload) =>
    seen.push({ topic: topic.split('/').pop()!, body: JSON.parse(payload.toString('utf8')) as Record<string, unknown> }),
  )
  for (const kind of KINDS) await subscribe(client, dev.topics[kind]!)
  return { client, seen }
}

const publishAcked = (client: MqttClient, topic: string, body: unknown) =>
  new Promise<void>((resolve, reject) =>
    client.publish(topic, typeof body === 'string' ? body : JSON.stringify(body), { qos: 1 }, (err) => (err ? reject(err) : resolve())),
  )

/**
 * What firmware does on its first session: applies the config the broker hands every new
 * subscriber (retained, so its PUBACK matches nothing stored) and reports the version it runs.
 */
async function reportConfig(
  _svc: TestApp,
  dev: PairedDevice,
  s: { client: MqttClient; seen: Message[] },
  api: Awaited<ReturnType<typeof setup>>['api'],
) {
  const config = await eventually(async () => s.seen.find((m) => m.topic === 'config'))
  await publishAcked(s.client, dev.topics.status!, { battery: 99, configVersion: config.body.version })
  await eventually(async () =>
    (await api<Downlink>('GET', `/api/device/${dev.deviceId}/downlink`)).body.messages.every(
      (m) => m.kind !== 'config' || m.status === 'delivered',
    ),
  )
}

t.test('a new session gets what is pending, never a config or image that a newer one replaced', async (t) => {
  const { svc, token, api } = shared
  const dev = await pairDevice(svc, token)
  const first = await session(svc, dev, false)
  await reportConfig(svc, dev, first, api)
  await close(first.client)

  // While it sleeps: two configs, two images, a command.
  t.equal((await api('PATCH', `/api/device/${dev.deviceId}`, { name: 'Second' })).status, 200)
  t.equal((await api('PATCH', `/api/device/${dev.deviceId}`, { name: 'Third' })).status, 200)
  const image = (id: string) => ({
    imageId: id,
    url: `${svc.url}/nowhere/${id}`,
    format: 'png',
    width: 1,
    height: 1,
    bytes: 1,
    sha256: '0'.repeat(64),
    contentType: 'image/png',
  })
  const [oldImage, newImage] = [randomUUID(), randomUUID()]
  await svc.app.deviceLink.publish(dev.deviceId, 'image', image(oldImage))
  await svc.app.deviceLink.publish(dev.deviceId, 'image', image(newImage))
  const cmd = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, { command: 'identify' })
  t.equal(cmd.status, 202)

  const listed = await api<Downlink>('GET', `/api/device/${dev.deviceId}/downlink?limit=20`)
  t.equal(listed.status, 200)
  t.same(
    listed.body.messages.map((m) => `${m.kind}:${m.status}`),
    ['cmd:pending', 'image:pending', 'image:superseded', 'config:pending', 'config:superseded', 'config:delivered'],
    'newest first: the older config and image were superseded when the newer ones were recorded',
  )

  // A clean session: the broker keeps nothing, so everything comes from the outbox (and the
  // broker's retained config, which the outbox leaves to it).
  const next = await session(svc, dev, true)
  t.teardown(() => next.client.end(true))
  await eventually(async () => next.seen.some((m) => m.topic === 'cmd'))
  t.same(
    next.seen.map((m) => [m.topic, m.body.name ?? m.body.imageId ?? m.body.commandId]),
    [
      ['config', 'Third'],
      ['image', newImage],
      ['cmd', cmd.body.commandId],
    ],
    'the newest config (retained), the newest image and the command, once each',
  )
  const seqs = next.seen.map((m) => m.body.seq as number)
  t.ok(
    seqs.every((s) => Number.isInteger(s) && s > 0),
    'every message carries its seq',
  )

  // PUBACKs of a clean session match nothing the broker stored: the device says what it applies.
  await publishAcked(next.client, dev.topics.status!, { battery: 90, configVersion: next.seen[0]!.body.version, shownImageId: newImage })
  await publishAcked(next.client, dev.topics.ack!, { seq: seqs[2], commandId: cmd.body.commandId, ok: true })
  const done = await eventually(async () => {
    const { body } = await api<Downlink>('GET', `/api/device/${dev.deviceId}/downlink?limit=20`)
    return body.messages.every((m) => m.status !== 'pending') ? body.messages : null
  })
  t.same(
    done.map((m) => m.status),
    ['delivered', 'delivered', 'superseded', 'delivered', 'superseded', 'delivered'],
    'the report delivered the config and the image, the ack the command',
  )
})

t.test('a persistent session: PUBACK marks delivered, and the next session is not sent it again', async (t) => {
  const { svc, token, api } = shared
  const dev = await pairDevice(svc, token)
  const first = await session(svc, dev, false)
  await reportConfig(svc, dev, first, api)
  await svc.app.deviceLink.publish(dev.deviceId, 'prompt', { promptId: 'p-1', text: 'one' })
  await eventually(async () => first.seen.some((m) => m.topic === 'prompt'))
  await eventually(async () =>
    (await api<Downlink>('GET', `/api/device/${dev.deviceId}/downlink`)).body.messages.every((m) => m.status === 'delivered'),
  )
  t.pass('the PUBACKs marked every message delivered')
  await close(first.client)
  const again = await session(svc, dev, true)
  t.teardown(() => again.client.end(true))
  await svc.app.deviceLink.publish(dev.deviceId, 'prompt', { promptId: 'p-2', text: 'two' })
  await eventually(async () => again.seen.some((m) => m.body.promptId === 'p-2'))
  t.same(
    again.seen.filter((m) => m.topic !== 'config').map((m) => m.body.promptId),
    ['p-2'],
    'only the new prompt arrives',
  )
})

t.test(
  'the bound: beyond DOWNLINK_MAX_PER_DEVICE, or older than DOWNLINK_MAX_AGE, pending messages are dropped with an event',
  async (t) => {
    const { svc, token, api } = await setup(t, { DOWNLINK_MAX_PER_DEVICE: '3' })
    const dev = await pairDevice(svc, token)
    const first = await session(svc, dev, false)
    await reportConfig(svc, dev, first, api)
    await close(first.client)
    const sent: string[] = []
    for (let n = 1; n <= 5; n++) {
      const res = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, { command: 'identify' })
      sent.push(res.body.commandId)
    }
    t.equal(await svc.app.downlink.sweep(), 2, 'two of five dropped')
    const events = (await api<{ events: EventRecord[] }>('GET', `/api/device/${dev.deviceId}/events?limit=50`)).body.events
    const dropped = events.filter((e) => e.type === 'device.downlink_dropped')
    t.equal(dropped.length, 1, 'one event for the run')
    t.match(dropped[0]!.data, { reason: 'limit', count: 2 })

    const next = await session(svc, dev, true)
    t.teardown(() => next.client.end(true))
    await eventually(async () => next.seen.filter((m) => m.topic === 'cmd').length >= 3)
    t.same(
      next.seen.filter((m) => m.topic === 'cmd').map((m) => m.body.commandId),
      sent.slice(2),
      'the newest three arrive, in order',
    )
    // A clean session's PUBACKs match nothing stored: the device acknowledges by seq.
    for (const m of next.seen.filter((m) => m.topic === 'cmd'))
      await publishAcked(next.client, dev.topics.ack!, { seq: m.body.seq, commandId: m.body.commandId, ok: true })
    await eventually(async () =>
      (await api<Downlink>('GET', `/api/device/${dev.deviceId}/downlink`)).body.messages.every((m) => m.status === 'delivered'),
    )
    await close(next.client)

    // Age: a pending message older than DOWNLINK_MAX_AGE goes too.
    await svc.app.deviceLink.publish(dev.deviceId, 'prompt', { promptId: 'old', text: 'old' })
    await svc.app.database.db.execute(
      sql`update device_message set created_at = now() - interval '30 days' where device_id = ${dev.deviceId} and kind = 'prompt'`,
    )
    t.equal(await svc.app.downlink.sweep(), 1)
    const later = (await api<{ events: EventRecord[] }>('GET', `/api/device/${dev.deviceId}/events?limit=50`)).body.events
    t.ok(
      later.some((e) => e.type === 'device.downlink_dropped' && e.data.reason === 'expired' && e.data.count === 1),
      'an expired message is an event too',
    )
  },
)

t.test(
  'uplink is bounded: acknowledgements of nothing are counted, not stored; oversized messages refused; ack events keep known fields',
  async (t) => {
    const { svc, token, api } = shared
    const dev = await pairDevice(svc, token)
    const c = await session(svc, dev, false)
    t.teardown(() => c.client.end(true))
    const stats = svc.app.broker!.uplinkStats
    const before = { ...stats }

    for (let i = 0; i < 20; i++) await publishAcked(c.client, dev.topics.ack!, { commandId: randomUUID(), ok: true, pad: 'x'.repeat(2000) })
    await publishAcked(c.client, dev.topics.ack!, { commandId: 'big', pad: 'y'.repeat(5000) })
    await publishAcked(c.client, dev.topics.status!, { battery: 5, pad: 'z'.repeat(5000) })
    await eventually(async () => stats.unmatchedAcks - before.unmatchedAcks === 20 && stats.oversized - before.oversized === 2)
    t.pass('20 unknown acks counted, 2 oversized messages refused')

    const cmd = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, { command: 'identify' })
    await publishAcked(c.client, dev.topics.ack!, {
      commandId: cmd.body.commandId,
      ok: false,
      error: 'e'.repeat(2000),
      junk: { deep: [1, 2, 3] },
    })
    const events = await eventually(async () => {
      const list = (await api<{ events: EventRecord[] }>('GET', `/api/device/${dev.deviceId}/events?limit=100`)).body.events
      return list.some((e) => e.type === 'device.ack') ? list : null
    })
    const acks = events.filter((e) => e.type === 'device.ack')
    t.equal(acks.length, 1, 'only the acknowledgement of a real command is stored')
    t.same(Object.keys(acks[0]!.data).sort(), ['commandId', 'error', 'matched', 'ok'], 'unknown fields are dropped')
    t.equal((acks[0]!.data.error as string).length, 500, 'the error text is cut to 500 characters')
    const detail = await api<{ info: { firmware?: string } }>('GET', `/api/device/${dev.deviceId}`)
    t.equal(detail.status, 200)
    t.equal(c.client.connected, true, 'the device stays connected')
  },
)

t.test('a message published while a resend runs is sent once, by one side or the other', async (t) => {
  const { svc, token } = shared
  const dev = await pairDevice(svc, token)
  // The outbox over the service's database with a transport that records: the race is between
  // storing a new message and the resend reading what is pending, so it needs no network.
  const sent: number[] = []
  const transport = {
    publish: async (_id: string, _kind: string, payload: object) => void sent.push((payload as { seq: number }).seq),
    kick: async () => true,
  }
  const outbox = createOutbox({
    repo: outboxRepository(svc.app.database.db),
    transport,
    limits: svc.config.downlink,
    log: { warn: () => {} },
  })
  let trials = 0
  for (let i = 0; i < 10; i++) {
    sent.length = 0
    await Promise.all([outbox.resend(dev.deviceId), outbox.publish(dev.deviceId, 'cmd', { i })])
    const twice = sent.filter((seq, k) => sent.indexOf(seq) !== k)
    if (twice.length) t.fail(`trial ${i}: sent ${sent.join(',')}`)
    // Acknowledge everything, so the next trial starts with nothing pending.
    await Promise.all([...new Set(sent)].map((seq) => outbox.delivered(dev.deviceId, seq)))
    trials++
  }
  await outbox.settled()
  t.equal(trials, 10, '10 trials, no message sent twice')
})

t.test('a message published live after the device subscribed, before its resend ran, is not resent', async (t) => {
  const { svc, token } = shared
  const dev = await pairDevice(svc, token)
  const sent: number[] = []
  const transport = {
    publish: async (_id: string, _kind: string, payload: object) => void sent.push((payload as { seq: number }).seq),
    kick: async () => true,
  }
  const outbox = createOutbox({
    repo: outboxRepository(svc.app.database.db),
    transport,
    limits: svc.config.downlink,
    log: { warn: () => {} },
  })
  // The transport saw the SUBACK and waits for the device's other SUBSCRIBEs before the resend.
  outbox.expectResend(dev.deviceId, true)
  await outbox.publish(dev.deviceId, 'cmd', { live: true })
  t.equal(sent.length, 1, 'sent live')
  const live = sent[0]!
  sent.length = 0
  await outbox.resend(dev.deviceId)
  t.notOk(sent.includes(live), 'and not again by the resend (which sends what else is pending)')

  // A resend that will not come (the connection closed first) leaves nothing behind: the next
  // session's resend sends what the closed one never received.
  sent.length = 0
  outbox.expectResend(dev.deviceId, true)
  outbox.expectResend(dev.deviceId, false)
  await outbox.resend(dev.deviceId)
  t.ok(sent.includes(live), 'the unacknowledged message goes to the next session')
  await outbox.settled()
})
