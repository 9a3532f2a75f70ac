// A TRMNL frame polls over HTTP, yet apps watching it see it live exactly as they see an MQTT
// frame: the retained devices/{id}/state follows its polls ({online: true} with its first poll,
// {online: false, reason: "poll_overdue"} when it stops), and each change is an event on
// devices/{id}/events, over the same MQTT connection an app already holds for its other frames.
import { sql } from 'drizzle-orm'
import sharp from 'sharp'
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { topicFor } from '../../src/mqtt/contract.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

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
  const setup = await (await appFetch(`${svc.url}/api/setup`, { headers: { ID: MAC, 'FW-Version': '1.8.14', Model: 'og' } })).json()
  const claimed = await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: setup.friendly_id, name: 'Hall' } })
  t.equal(claimed.status, 200)
  const deviceId = claimed.body.device.id as string

  const app = await connect(mqttUrl(svc), { clientId: `app-${deviceId.slice(0, 8)}`, username: 'user', password: owner, clean: true })
  t.teardown(() => app.end(true))
  const seen = watch(app)
  await subscribe(app, topicFor(deviceId, 'state'))
  await subscribe(app, topicFor(deviceId, 'events'))

  const poll = await appFetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })
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
  await appFetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })
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
  const setup = await (await appFetch(`${svc.url}/api/setup`, { headers: { ID: MAC, 'FW-Version': '1.8.14', Model: 'og' } })).json()
  const claimed = await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: setup.friendly_id, name: 'Hall' } })
  const deviceId = claimed.body.device.id as string
  t.equal((await appFetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })).status, 200)

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
  t.equal((await appFetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })).status, 200)
  const after = await pending()
  t.same(
    after.filter((m) => m.status === 'pending'),
    [],
    'nothing left pending: the poll fetched the frame’s current state',
  )
  t.ok(after.some((m) => m.kind === 'prompt' && m.status === 'delivered'))
})

t.test(
  'a polling frame leaves nothing to age out as device.downlink_dropped: a withdrawn offer and a picture it has are delivered by the poll',
  async (t) => {
    const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
    const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl-dropped'))
    const setup = await (await appFetch(`${svc.url}/api/setup`, { headers: { ID: MAC, 'FW-Version': '1.8.14', Model: 'og' } })).json()
    const claimed = await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: setup.friendly_id, name: 'Hall' } })
    const deviceId = claimed.body.device.id as string
    t.equal((await appFetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })).status, 200)

    // What the firmware service stages when it takes an offer back: the poll answers update_firmware: false, which is that.
    await svc.app.deviceLink.publish(deviceId, 'ota', { version: null })
    // A picture the frame already holds under the name the poll gives it (a rotation coming back to it): drawn without a download.
    const png = await sharp({ create: { width: 800, height: 480, channels: 3, background: '#000' } })
      .png()
      .toBuffer()
    const form = new FormData()
    form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'black.png')
    const up = await (
      await appFetch(`${svc.url}/api/upload`, { method: 'POST', headers: { authorization: `Bearer ${owner}` }, body: form })
    ).json()
    const sent = await jsonCall(svc.url, '/api/upload/send', { token: owner, body: { key: up.key, deviceId } })
    t.equal(sent.status, 200)

    const answer = await (await appFetch(`${svc.url}/api/display`, { headers: headers(setup.api_key) })).json()
    t.match(answer, { update_firmware: false, image_url: new RegExp(`/${sent.body.imageId}/`) })
    const messages = (await jsonCall(svc.url, `/api/device/${deviceId}/downlink?limit=50`, { token: owner })).body.messages as Array<{
      kind: string
      status: string
    }>
    t.same(
      messages.filter((m) => m.status === 'pending'),
      [],
      'the poll delivered both',
    )
    // Aged past DOWNLINK_MAX_AGE: nothing is dropped.
    await svc.app.database.db.execute(sql`update device_message set created_at = now() - interval '30 days' where device_id = ${deviceId}`)
    t.equal(await svc.app.downlink.sweep(), 0, 'nothing dropped')
    const events = (await jsonCall(svc.url, `/api/device/${deviceId}/events?limit=50`, { token: owner })).body.events as Array<{
      type: string
    }>
    t.notOk(
      events.some((e) => e.type === 'device.downlink_dropped'),
      'no device.downlink_dropped',
    )
  },
)
