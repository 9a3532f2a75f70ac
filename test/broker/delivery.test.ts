// Delivery to devices: QoS 1 commands survive the device being offline on a persistent session
// (MQTT 3.1.1 section 3.1.2.4), the desired config is retained, and up/status drives isSynced.
import t from 'tap'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

type Cmd = { commandId: string; command: string; args: Record<string, unknown>; issuedAt: string }
type Config = {
  version: number
  name: string
  color: string
  selectedModel: string
  icon: string
  display: { width: number; height: number; palette: string }
}
type Detail = {
  isSynced: boolean
  isActive: boolean
  name: string
  color: string
  info: { firmware?: string }
  last_seen_at: string | null
}

let svc: TestApp
let token: string

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  ;({ token } = await signUp(makeClient(svc.url).client, uniqueEmail('delivery')))
})

const deviceOpts = (dev: PairedDevice, opts: IClientOptions = {}): IClientOptions => ({
  clientId: dev.deviceId,
  username: dev.deviceId,
  password: dev.password,
  ...opts,
})

/**
 * Connects with a message recorder attached before CONNACK, so messages the broker sends straight
 * after it (a persistent session's queue, retained messages) are not missed.
 */
function connectRecording(dev: PairedDevice, opts: IClientOptions = {}) {
  return new Promise<{
    client: MqttClient
    sessionPresent: boolean
    seen: Array<{ topic: string; payload: Record<string, unknown>; retain: boolean }>
  }>((resolve, reject) => {
    const seen: Array<{ topic: string; payload: Record<string, unknown>; retain: boolean }> = []
    const client = mqtt.connect(mqttUrl(svc), { reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...deviceOpts(dev, opts) })
    client.on('message', (topic, payload, packet) =>
      seen.push({ topic, payload: JSON.parse(payload.toString('utf8')), retain: packet.retain }),
    )
    client.once('connect', (connack) => resolve({ client, sessionPresent: connack.sessionPresent, seen }))
    client.once('error', (err) => {
      client.end(true)
      reject(err)
    })
  })
}

async function api<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await appFetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: res.status, body: (await res.json()) as T }
}
const detail = async (id: string) => (await api<Detail>('GET', `/api/device/${id}`)).body

const publishAcked = (client: MqttClient, topic: string, body: object) =>
  new Promise<void>((resolve, reject) => client.publish(topic, JSON.stringify(body), { qos: 1 }, (err) => (err ? reject(err) : resolve())))

t.test('a command sent while the device is offline arrives when it reconnects', async (t) => {
  const dev = await pairDevice(svc, token)
  // First visit: a persistent session with a QoS 1 subscription to its commands.
  const first = await connectRecording(dev, { clean: false })
  t.equal(first.sessionPresent, false, 'no session yet')
  t.equal(await subscribe(first.client, dev.topics.cmd!, 1), 1)
  await close(first.client)
  await eventually(async () => !(await detail(dev.deviceId)).isActive)

  // While it sleeps, its owner sends two commands.
  const identify = await api<{ commandId: string; status: string; command: string }>('POST', `/api/device/${dev.deviceId}/command`, {
    command: 'identify',
  })
  t.equal(identify.status, 202)
  t.equal(identify.body.command, 'identify')
  t.type(identify.body.commandId, 'string')
  const sleep = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, {
    command: 'sleep',
    args: { seconds: 600 },
  })
  t.equal(sleep.status, 202, 'args as the MQTT message carries them')
  // The older top-level form is still taken; what does not fit is a 400 that says what would.
  const send = (body: Record<string, unknown>) =>
    api<{ message: string; code: string }>('POST', `/api/device/${dev.deviceId}/command`, body)
  t.equal((await send({ command: 'sleep', seconds: 5 })).status, 202, 'top-level seconds still accepted')
  const unknown = await send({ command: 'dance' })
  t.equal(unknown.status, 400)
  t.match(
    unknown.body,
    { code: 'VALIDATION_ERROR', message: /"identify", "refresh", "reboot", "sleep"/ },
    'the allowed commands are listed',
  )
  t.match((await send({ command: 'sleep' })).body.message, /sleep needs args\.seconds/)
  t.match((await send({ command: 'sleep', seconds: 5, args: { seconds: 6 } })).body.message, /differ/)
  t.match((await send({ command: 'identify', args: { seconds: 5 } })).body.message, /identify takes no seconds/)

  // It wakes up on the same session: both are delivered, in order, without subscribing again.
  const back = await connectRecording(dev, { clean: false })
  t.teardown(() => back.client.end(true))
  t.equal(back.sessionPresent, true, 'the broker kept the session')
  await eventually(async () => back.seen.filter((m) => m.topic === dev.topics.cmd).length >= 3)
  const cmds = back.seen.filter((m) => m.topic === dev.topics.cmd).map((m) => m.payload as unknown as Cmd)
  t.same(
    cmds.slice(0, 2).map((c) => [c.commandId, c.command]),
    [
      [identify.body.commandId, 'identify'],
      [sleep.body.commandId, 'sleep'],
    ],
  )
  t.same(cmds[1]!.args, { seconds: 600 })
  t.ok(Date.parse(cmds[0]!.issuedAt) > 0)

  // Its ack is recorded against the command.
  await publishAcked(back.client, dev.topics.ack!, { commandId: identify.body.commandId, ok: true })
  const ack = await eventually(async () => {
    const evs = (
      await api<{ events: Array<{ type: string; data: Record<string, unknown> }> }>('GET', `/api/device/${dev.deviceId}/events?limit=50`)
    ).body.events
    return evs.find((e) => e.type === 'device.ack')
  })
  t.equal(ack.data.commandId, identify.body.commandId)
  t.equal(ack.data.matched, true)
  await close(back.client)

  // Delivered once: a later visit on the same session gets nothing more.
  const third = await connectRecording(dev, { clean: false })
  t.equal(third.sessionPresent, true)
  // Publish only once the session is fully restored (presence is written after aedes has
  // flushed the stored queue): aedes 1.2 sends a QoS 1 message published between CONNACK
  // and the end of that flush twice, once live and once from the queue.
  await eventually(async () => (await detail(dev.deviceId)).isActive)
  const marker = nextMessage(third.client, dev.topics.cmd!)
  await svc.app.broker!.publish(dev.deviceId, 'cmd', { marker: 'later' })
  t.same((await marker).payload, { marker: 'later' })
  t.same(
    third.seen.map((m) => m.payload),
    [{ marker: 'later' }],
    'the old commands were not delivered again',
  )
  await close(third.client)
})

t.test('a clean session gets nothing sent while it was away', async (t) => {
  const dev = await pairDevice(svc, token)
  const first = await connectRecording(dev, { clean: true })
  t.equal(await subscribe(first.client, dev.topics.cmd!, 1), 1)
  await close(first.client)
  const sent = await api('POST', `/api/device/${dev.deviceId}/command`, { command: 'refresh' })
  t.equal(sent.status, 202)
  const back = await connectRecording(dev, { clean: true })
  t.teardown(() => back.client.end(true))
  t.equal(back.sessionPresent, false)
  t.equal(await subscribe(back.client, dev.topics.cmd!, 1), 1)
  const marker = nextMessage(back.client, dev.topics.cmd!)
  await svc.app.broker!.publish(dev.deviceId, 'cmd', { marker: 'now' })
  t.same((await marker).payload, { marker: 'now' })
  t.same(
    back.seen.map((m) => m.payload),
    [{ marker: 'now' }],
    'the command sent while away was not kept',
  )
})

t.test('commands need the owner and a known command', async (t) => {
  const dev = await pairDevice(svc, token)
  const stranger = await signUp(makeClient(svc.url).client, uniqueEmail('delivery-stranger'))
  const res = await appFetch(`${svc.url}/api/device/${dev.deviceId}/command`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stranger.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'reboot' }),
  })
  t.equal(res.status, 404, "a stranger cannot command someone else's device")
  t.equal((await api('POST', `/api/device/${dev.deviceId}/command`, { command: 'format-disk' })).status, 400)
  t.equal((await api('POST', `/api/device/${dev.deviceId}/command`, { command: 'sleep' })).status, 400, 'sleep needs seconds')
  // The device received none of those.
  const c = await connectRecording(dev)
  t.teardown(() => c.client.end(true))
  t.equal(await subscribe(c.client, dev.topics.cmd!, 1), 1)
  const ok = nextMessage<Cmd>(c.client, dev.topics.cmd!)
  const sent = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, { command: 'reboot' })
  t.equal(sent.status, 202)
  t.equal((await ok).payload.commandId, sent.body.commandId)
  t.equal(c.seen.length, 1)
})

t.test('up/status syncs the device; a PATCH publishes a new retained config and unsyncs it', async (t) => {
  const dev = await pairDevice(svc, token, { name: 'Kitchen' })
  t.equal((await detail(dev.deviceId)).isSynced, false, 'not synced before it reports')

  const c = await connectRecording(dev)
  t.teardown(() => c.client.end(true))
  t.equal(await subscribe(c.client, dev.topics.config!, 1), 1)
  await eventually(async () => c.seen.some((m) => m.topic === dev.topics.config))
  const initial = c.seen.find((m) => m.topic === dev.topics.config)!
  t.equal(initial.retain, true)
  const cfg1 = initial.payload as unknown as Config
  t.equal(cfg1.name, 'Kitchen')
  t.same(cfg1.display, { width: 800, height: 480, palette: 'bw', fit: 'cover' })

  // Each report carries its own firmware string, so the test can tell when it has been applied.
  const report = async (firmware: string, configVersion: number, shownImageId: string | null = null) => {
    await publishAcked(c.client, dev.topics.status!, { battery: 80, firmware, shownImageId, configVersion })
    return eventually(async () => {
      const d = await detail(dev.deviceId)
      return d.info.firmware === firmware ? d : null
    })
  }

  // A report of an older config version does not sync it.
  t.equal((await report('1.0.1', cfg1.version - 1)).isSynced, false, 'older version: not synced')
  // Reporting the current version with no image shown: in sync.
  t.equal((await report('1.0.2', cfg1.version)).isSynced, true, 'current version: synced')
  // A report claiming an image nobody asked for is out of sync.
  t.equal((await report('1.0.3', cfg1.version, 'img-unknown')).isSynced, false, 'unexpected shown image: not synced')
  t.equal((await report('1.0.4', cfg1.version)).isSynced, true)

  // The owner renames it: the device gets the new config live, and is out of sync.
  const next = nextMessage<Config>(c.client, dev.topics.config!)
  const patched = await api<Detail>('PATCH', `/api/device/${dev.deviceId}`, { name: 'Hallway', color: '#AA00FF' })
  t.equal(patched.status, 200)
  t.equal(patched.body.isSynced, false, 'the PATCH answer already says unsynced')
  const cfg2 = (await next).payload
  t.equal(cfg2.version, cfg1.version + 1)
  t.equal(cfg2.name, 'Hallway')
  t.equal(cfg2.color, '#aa00ff')
  t.equal((await detail(dev.deviceId)).isSynced, false)

  // Reporting the old version keeps it unsynced; the new one syncs it.
  t.equal((await report('1.0.5', cfg1.version)).isSynced, false, 'old version reported: still unsynced')
  t.equal((await report('1.0.6', cfg2.version)).isSynced, true, 'synced after reporting the new version')
  await close(c.client)

  // The new config is what is retained: a device connecting later gets it on subscribe.
  const later = await connect(mqttUrl(svc), deviceOpts(dev))
  t.teardown(() => later.end(true))
  const retained = nextMessage<Config>(later, dev.topics.config!)
  await subscribe(later, dev.topics.config!)
  const r = await retained
  t.equal(r.retain, true)
  t.equal(r.payload.version, cfg2.version)
  t.equal(r.payload.name, 'Hallway')
  await close(later)
})

t.test('malformed uplink is ignored and the device keeps working', async (t) => {
  const dev = await pairDevice(svc, token)
  const c = await connectRecording(dev)
  t.teardown(() => c.client.end(true))
  t.equal(await subscribe(c.client, dev.topics.config!, 1), 1)
  await eventually(async () => c.seen.some((m) => m.topic === dev.topics.config))
  const version = (c.seen.find((m) => m.topic === dev.topics.config)!.payload as unknown as Config).version
  await new Promise<void>((resolve, reject) =>
    c.client.publish(dev.topics.status!, 'not json{', { qos: 1 }, (err) => (err ? reject(err) : resolve())),
  )
  await publishAcked(c.client, dev.topics.status!, { battery: 'lots', firmware: 42, shownImageId: null, configVersion: 'x' })
  await publishAcked(c.client, dev.topics.ack!, { commandId: 12345 })
  // Uplink is stored before its PUBACK: a value the database itself refuses (U+0000 in text) is
  // malformed too, acknowledged and counted, not a failure the device would send again forever.
  const invalid = svc.app.broker!.uplinkStats.invalid
  await publishAcked(c.client, dev.topics.status!, { battery: 40, firmware: 'v\u0000', shownImageId: null })
  t.equal(svc.app.broker!.uplinkStats.invalid, invalid + 1, 'refused by the database: counted as invalid')
  t.equal(c.client.connected, true, 'the device stays connected')
  // A good report afterwards is applied, and the bad one with a non-number version synced nothing before it.
  t.equal((await detail(dev.deviceId)).isSynced, false)
  await publishAcked(c.client, dev.topics.status!, { battery: 50, firmware: '2.0.0', shownImageId: null, configVersion: version })
  const d = await eventually(async () => {
    const x = await detail(dev.deviceId)
    return x.isSynced ? x : null
  })
  t.equal(d.info.firmware, '2.0.0')
  await close(c.client)
})
