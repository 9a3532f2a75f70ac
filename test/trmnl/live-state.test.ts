// A TRMNL frame polls over HTTP, yet apps watching it see it live exactly as they see an MQTT
// frame: the retained devices/{id}/state follows its polls ({online: true} with its first poll,
// {online: false, reason: "poll_overdue"} when it stops), and each change is an event on
// devices/{id}/events, over the same MQTT connection an app already holds for its other frames.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { topicFor } from '../../src/mqtt/contract.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'

let now = Date.parse('2026-06-01T12:00:00Z')
const clock = () => new Date(now)
const MAC = 'A0:B7:65:1C:2D:4F'
const headers = (token: string) => ({
  ID: MAC,
  'Access-Token': token,
  'Refresh-Rate': '900',
  'Battery-Voltage': '3.9',
  'FW-Version': '1.8.14',
  Model: 'og',
  Width: '800',
  Height: '480',
})

type Seen = { topic: string; body: Record<string, unknown>; retain: boolean }
function watch(app: MqttClient): Seen[] {
  const seen: Seen[] = []
  app.on('message', (topic, payload, packet) => seen.push({ topic, body: JSON.parse(payload.toString('utf8')), retain: packet.retain }))
  return seen
}

t.test('a polling frame is online and offline on devices/{id}/state, with its events', async (t) => {
  const svc = await startApp(t, {
    clock,
    env: { DEVICE_POLL_INTERVAL: '0', TRMNL_REFRESH_SECONDS: '600', TRMNL_OFFLINE_MARGIN_SECONDS: '60' },
  })
  const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl-live'))
  const setup = await (await fetch(`${svc.url}/api/setup`, { headers: { ID: MAC, 'FW-Version': '1.8.14', Model: 'og' } })).json()
  const claimed = await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: setup.friendly_id, name: 'Hall' } })
  t.equal(claimed.status, 200)
  const deviceId = claimed.body.device.id as string

  const app = await connect(mqttUrl(svc), { clientId: `app-${deviceId.slice(0, 8)}`, username: 'user', password: owner, clean: true })
  t.teardown(() => app.end(true))
  const seen = watch(app)
  await subscribe(app, topicFor(deviceId, 'state'))
  await subscribe(app, topicFor(deviceId, 'events'))

  const poll = await fetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })
  t.equal(poll.status, 200)
  await eventually(async () => seen.some((m) => m.topic.endsWith('/state') && m.body.online === true))
  t.match(
    seen.find((m) => m.topic === topicFor(deviceId, 'state')),
    { body: { online: true, since: new Date(now).toISOString() } },
  )
  await eventually(async () => seen.some((m) => m.topic.endsWith('/events') && m.body.type === 'device.connected'))
  t.match(
    seen.find((m) => m.topic === topicFor(deviceId, 'events')),
    {
      body: { type: 'device.connected', deviceId, data: { transport: 'http' } },
    },
  )

  // Polls while online change nothing apps see.
  const before = seen.length
  await fetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })
  await new Promise((r) => setTimeout(r, 300))
  t.equal(seen.length, before, 'a poll of a frame already online publishes nothing')

  // A watcher that subscribes later gets the retained state at once.
  const late = await connect(mqttUrl(svc), { clientId: `late-${deviceId.slice(0, 8)}`, username: 'user', password: owner, clean: true })
  t.teardown(() => late.end(true))
  const lateSeen = watch(late)
  await subscribe(late, topicFor(deviceId, 'state'))
  await eventually(async () => lateSeen.length > 0)
  t.match(lateSeen[0], { body: { online: true }, retain: true }, 'retained, as for an MQTT frame')

  now += (900 + 61) * 1000
  t.equal(await svc.app.trmnl!.sweep(), 1)
  await eventually(async () => seen.some((m) => m.topic.endsWith('/state') && m.body.online === false))
  t.match(seen.filter((m) => m.topic.endsWith('/state')).at(-1), { body: { online: false, reason: 'poll_overdue' } })
  await eventually(async () => seen.some((m) => m.body.type === 'device.disconnected'))
  t.match(
    seen.find((m) => m.body.type === 'device.disconnected'),
    { topic: topicFor(deviceId, 'events'), body: { data: { reason: 'poll_overdue' } } },
  )
})

t.test('what is recorded for a polling frame is delivered by the poll that fetches its state', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl-outbox'))
  const setup = await (await fetch(`${svc.url}/api/setup`, { headers: { ID: MAC, 'FW-Version': '1.8.14', Model: 'og' } })).json()
  const claimed = await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: setup.friendly_id, name: 'Hall' } })
  const deviceId = claimed.body.device.id as string
  t.equal((await fetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })).status, 200)

  const prompt = await jsonCall(svc.url, '/api/prompts', { token: owner, body: { text: 'a lighthouse', deviceId } })
  t.equal(prompt.status, 201)
  const command = await jsonCall(svc.url, `/api/device/${deviceId}/command`, { token: owner, body: { command: 'identify' } })
  t.ok(command.status < 300, `command ${command.status}`)
  const pending = async () =>
    (await jsonCall(svc.url, `/api/device/${deviceId}/downlink?limit=50`, { token: owner })).body.messages as Array<{
      kind: string
      status: string
    }>
  const before = await pending()
  t.ok(
    before.some((m) => m.kind === 'prompt' && m.status === 'pending'),
    'the prompt is recorded, pending until the frame polls',
  )
  t.equal((await fetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })).status, 200)
  const after = await pending()
  t.same(
    after.filter((m) => m.status === 'pending'),
    [],
    'nothing left pending: the poll fetched the frame’s current state',
  )
  t.ok(after.some((m) => m.kind === 'prompt' && m.status === 'delivered'))
})
