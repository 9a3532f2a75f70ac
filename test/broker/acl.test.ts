// Authorization on the broker: a device subscribes only to its own downlink topics and publishes
// only to its own up/ topics; refused subscriptions get SUBACK 0x80 (MQTT 3.1.1 section 3.9.3),
// refused publishes are acknowledged but reach nobody. Apps see only devices they may see.
import t from 'tap'
import type { IClientOptions, MqttClient } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'

let svc: TestApp
let token: string
let strangerToken: string

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  ;({ token } = await signUp(makeClient(svc.url).client, uniqueEmail('acl-owner')))
  ;({ token: strangerToken } = await signUp(makeClient(svc.url).client, uniqueEmail('acl-stranger')))
})

const asDevice = (dev: PairedDevice, opts: IClientOptions = {}) => connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, ...opts })

let appSeq = 0
const asApp = (bearer: string) => connect(mqttUrl(svc), { clientId: `app-${process.pid}-${++appSeq}`, username: 'user', password: bearer })

/** The return code the broker granted for one subscription (0x80 = refused), whether or not mqtt.js calls it an error. */
function granted(client: MqttClient, topic: string, qos: 0 | 1 = 1): Promise<number> {
  return new Promise((resolve, reject) => {
    client.subscribe(topic, { qos }, (err, _subs, packet) => {
      const code = (packet as { granted?: number[] } | undefined)?.granted?.[0]
      if (code === undefined) reject(err ?? new Error('no SUBACK'))
      else resolve(code)
    })
  })
}

/** Publishes with QoS 1 and resolves on PUBACK. */
const publishAcked = (client: MqttClient, topic: string, body: object, opts: { retain?: boolean } = {}) =>
  new Promise<void>((resolve, reject) => client.publish(topic, JSON.stringify(body), { qos: 1, retain: opts.retain ?? false }, (err) => (err ? reject(err) : resolve())))

/** Every message a client receives, in order. */
function record(client: MqttClient) {
  const seen: Array<{ topic: string; payload: Record<string, unknown> }> = []
  client.on('message', (topic, payload) => seen.push({ topic, payload: JSON.parse(payload.toString('utf8')) }))
  return seen
}

async function detail(id: string, bearer = token) {
  const res = await fetch(`${svc.url}/api/device/${id}`, { headers: { authorization: `Bearer ${bearer}` } })
  return { status: res.status, body: (await res.json()) as { isSynced: boolean; info: { firmware?: string } } }
}

async function currentConfigVersion(dev: PairedDevice): Promise<number> {
  const probe = await asDevice(dev, { clientId: dev.deviceId })
  const got = nextMessage<{ version: number }>(probe, dev.topics.config!)
  await subscribe(probe, dev.topics.config!)
  const v = (await got).payload.version
  await close(probe)
  return v
}

t.test('a device may not subscribe outside its own topics', async (t) => {
  const a = await pairDevice(svc, token, { name: 'A' })
  const b = await pairDevice(svc, token, { name: 'B' })
  const c = await asDevice(a)
  t.teardown(() => c.end(true))
  const refusedBefore = svc.app.broker!.stats.refusedSubscriptions

  const own = [`devices/${a.deviceId}/cmd`, `devices/${a.deviceId}/prompt`, `devices/${a.deviceId}/image`, `devices/${a.deviceId}/config`, `devices/${a.deviceId}/#`]
  for (const topic of own) t.equal(await granted(c, topic), 1, `own ${topic} granted`)

  const refused = [
    `devices/${b.deviceId}/cmd`,
    `devices/${b.deviceId}/config`,
    `devices/${b.deviceId}/up/status`,
    `devices/${b.deviceId}/#`,
    `devices/${a.deviceId}/up/status`,
    'devices/+/cmd',
    'devices/+/#',
    'devices/#',
    '#',
    '+/+/cmd',
    '$SYS/#',
    '$drop/refused',
  ]
  for (const topic of refused) t.equal(await granted(c, topic), 128, `${topic} refused`)
  t.equal(svc.app.broker!.stats.refusedSubscriptions - refusedBefore, refused.length, 'each refusal counted')
  t.equal(c.connected, true, 'refusals do not end the session')

  // A refused filter delivers nothing: a command for B does not reach A, one for A does.
  const seen = record(c)
  await svc.app.broker!.publish(b.deviceId, 'cmd', { marker: 'for-b' })
  const mine = nextMessage(c, `devices/${a.deviceId}/cmd`)
  await svc.app.broker!.publish(a.deviceId, 'cmd', { marker: 'for-a' })
  t.same((await mine).payload, { marker: 'for-a' })
  t.same(
    seen.map((m) => m.payload.marker),
    ['for-a'],
    'only its own command arrived',
  )
})

t.test('publishing outside its own up/ topics reaches nobody and is counted', async (t) => {
  const a = await pairDevice(svc, token, { name: 'A' })
  const b = await pairDevice(svc, token, { name: 'B' })
  const bVersion = await currentConfigVersion(b)

  const cb = await asDevice(b)
  t.teardown(() => cb.end(true))
  const bSeen = record(cb)
  for (const k of ['cmd', 'prompt', 'image', 'state']) t.equal(await subscribe(cb, `devices/${b.deviceId}/${k}`), 1)
  // Drain B's own retained state (online:true) before measuring.
  await eventually(async () => bSeen.some((m) => m.topic === `devices/${b.deviceId}/state` && m.payload.online === true))
  bSeen.length = 0

  const ca = await asDevice(a)
  t.teardown(() => ca.end(true))
  const aSeen = record(ca)
  t.equal(await subscribe(ca, `devices/${a.deviceId}/cmd`), 1)

  const dropped = svc.app.broker!.stats.droppedPublishes
  const forged = [
    [`devices/${b.deviceId}/cmd`, { command: 'reboot', forged: true }],
    [`devices/${b.deviceId}/prompt`, { prompt: 'forged' }],
    [`devices/${b.deviceId}/image`, { url: 'http://evil.example/x.png' }],
    [`devices/${b.deviceId}/state`, { online: false, forged: true }],
    [`devices/${b.deviceId}/up/status`, { battery: 1, firmware: 'forged', shownImageId: null, configVersion: bVersion }],
    [`devices/${b.deviceId}/up/ack`, { commandId: 'forged' }],
    [`devices/${a.deviceId}/cmd`, { command: 'reboot', forged: true }],
    [`devices/${a.deviceId}/config`, { version: 999 }],
    [`devices/${a.deviceId}/events`, { type: 'device.connected', forged: true }],
    ['$SYS/broker/uptime', { forged: true }],
    ['elsewhere', { forged: true }],
  ] as const
  for (const [topic, body] of forged) await publishAcked(ca, topic, body)
  // A retained forgery of B's config must not replace the service's.
  await publishAcked(ca, `devices/${b.deviceId}/config`, { version: 999, forged: true }, { retain: true })
  t.equal(svc.app.broker!.stats.droppedPublishes - dropped, forged.length + 1, 'every forged publish was dropped and counted')
  t.equal(ca.connected, true, 'the publisher stays connected')

  // Markers from the service arrive first at both: nothing forged got there before them.
  const bMarker = nextMessage(cb, `devices/${b.deviceId}/cmd`)
  await svc.app.broker!.publish(b.deviceId, 'cmd', { marker: 'b' })
  t.same((await bMarker).payload, { marker: 'b' })
  t.same(bSeen, [{ topic: `devices/${b.deviceId}/cmd`, payload: { marker: 'b' } }], 'B received nothing forged')
  const aMarker = nextMessage(ca, `devices/${a.deviceId}/cmd`)
  await svc.app.broker!.publish(a.deviceId, 'cmd', { marker: 'a' })
  t.same((await aMarker).payload, { marker: 'a' })
  t.same(aSeen, [{ topic: `devices/${a.deviceId}/cmd`, payload: { marker: 'a' } }], 'A did not receive its own forged command')

  // B's record is untouched by the forged status, and the retained config is still the service's.
  const d = await detail(b.deviceId)
  t.equal(d.body.isSynced, false, 'forged up/status did not sync B')
  t.not(d.body.info.firmware, 'forged')
  t.equal(await currentConfigVersion(b), bVersion, "B's retained config is the service's")

  // A's own uplink still works: a real status syncs A.
  const aVersion = await currentConfigVersion(a)
  const ca2 = await asDevice(a)
  t.teardown(() => ca2.end(true))
  await publishAcked(ca2, `devices/${a.deviceId}/up/status`, { battery: 80, firmware: '1.0.1', shownImageId: null, configVersion: aVersion })
  await eventually(async () => (await detail(a.deviceId)).body.isSynced)
  t.pass('own up/status accepted')
})

t.test('an app subscribes only to state and events of devices it may see', async (t) => {
  const mine = await pairDevice(svc, token, { name: 'Mine' })
  const theirs = await pairDevice(svc, strangerToken, { name: 'Theirs' })
  const app = await asApp(token)
  t.teardown(() => app.end(true))

  t.equal(await granted(app, `devices/${mine.deviceId}/state`, 1), 1)
  t.equal(await granted(app, `devices/${mine.deviceId}/events`, 0), 0)
  for (const topic of [
    `devices/${theirs.deviceId}/state`,
    `devices/${theirs.deviceId}/events`,
    `devices/${mine.deviceId}/cmd`,
    `devices/${mine.deviceId}/config`,
    `devices/${mine.deviceId}/up/status`,
    `devices/${mine.deviceId}/#`,
    'devices/+/state',
    'devices/+/events',
    '#',
    '$SYS/#',
  ]) {
    t.equal(await granted(app, topic), 128, `${topic} refused`)
  }

  // It watches its device come online: the events topic carries device.connected, state is retained.
  const event = nextMessage<{ type: string; deviceId: string; data: { clientId: string } }>(app, `devices/${mine.deviceId}/events`)
  const state = nextMessage<{ online: boolean; since: string }>(app, `devices/${mine.deviceId}/state`)
  const d = await asDevice(mine)
  t.teardown(() => d.end(true))
  const ev = await event
  t.equal(ev.payload.type, 'device.connected')
  t.equal(ev.payload.deviceId, mine.deviceId)
  t.equal(ev.payload.data.clientId, mine.deviceId)
  const st = await state
  t.equal(st.payload.online, true)
  t.ok(!Number.isNaN(Date.parse(st.payload.since)), 'since is a timestamp')

  // A second app subscription later gets the retained state straight away.
  const late = await asApp(token)
  t.teardown(() => late.end(true))
  const retained = nextMessage<{ online: boolean }>(late, `devices/${mine.deviceId}/state`)
  t.equal(await subscribe(late, `devices/${mine.deviceId}/state`), 1)
  const r = await retained
  t.equal(r.retain, true)
  t.equal(r.payload.online, true)

  // The stranger's app sees its own device, not ours.
  const other = await asApp(strangerToken)
  t.teardown(() => other.end(true))
  t.equal(await granted(other, `devices/${theirs.deviceId}/state`), 1)
  t.equal(await granted(other, `devices/${mine.deviceId}/state`), 128)

  // An app publishes nowhere: a forged command does not reach the device.
  const dropped = svc.app.broker!.stats.droppedPublishes
  const seen = record(d)
  t.equal(await subscribe(d, mine.topics.cmd!), 1)
  await publishAcked(app, mine.topics.cmd!, { command: 'reboot', forged: true })
  t.equal(svc.app.broker!.stats.droppedPublishes - dropped, 1)
  const marker = nextMessage(d, mine.topics.cmd!)
  await svc.app.broker!.publish(mine.deviceId, 'cmd', { marker: 'real' })
  t.same((await marker).payload, { marker: 'real' })
  t.same(
    seen.filter((m) => m.topic === mine.topics.cmd).map((m) => m.payload),
    [{ marker: 'real' }],
  )
  await close(d)
})
