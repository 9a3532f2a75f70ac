// Screens fed by a URL, against a local HTTP server: a calendar screen on an MQTT frame and a
// polling TRMNL frame, its ICS feed changed, both frames getting the new picture; the source's
// headers sent but never shown; and the data URLs that are refused (loopback for a non-admin,
// a name resolving to loopback, a timeout, non-JSON, too large), each a clear error on the
// screen's record while its frame keeps its picture.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { signUpAdmin } from '../helpers/admin.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

let now = Date.parse('2026-06-10T09:00:00Z')
const clock = () => new Date(now)

function ics(title: string, day: string) {
  return [
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//test//EN',
    'BEGIN:VEVENT',
    `UID:${title}@test`,
    `DTSTART:${day}T100000Z`,
    `DTEND:${day}T110000Z`,
    `SUMMARY:${title}`,
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n')
}

type Feed = { body: string; type: string; delayMs?: number; status?: number }
async function feedServer(t: Tap): Promise<{ url: string; feeds: Map<string, Feed>; seen: IncomingHttpHeaders[] }> {
  const feeds = new Map<string, Feed>()
  const seen: IncomingHttpHeaders[] = []
  const server: Server = createServer((req, res) => {
    seen.push(req.headers)
    const feed = feeds.get(req.url ?? '')
    if (!feed) return void res.writeHead(404).end()
    setTimeout(() => {
      if (!res.writableEnded) res.writeHead(feed.status ?? 200, { 'content-type': feed.type }).end(feed.body)
    }, feed.delayMs ?? 0)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())).then(() => server.closeAllConnections()))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, feeds, seen }
}
type Tap = { teardown(fn: () => unknown): void }

async function listen(svc: TestApp, dev: PairedDevice) {
  const c: MqttClient = await connect(mqttUrl(svc), {
    clientId: dev.clientId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
  })
  const images: Array<{ imageId: string; sha256: string }> = []
  c.on('message', (topic, payload) => {
    if (topic.endsWith('/image')) images.push(JSON.parse(payload.toString()))
  })
  await subscribe(c, `devices/${dev.deviceId}/+`)
  return { c, images }
}

const MAC = 'A0:B7:65:1C:2D:60'
const trmnlHeaders = (key: string) => ({
  ID: MAC,
  'Access-Token': key,
  'Refresh-Rate': '900',
  'FW-Version': '1.8.14',
  Model: 'og',
  Width: '800',
  Height: '480',
})

t.test('a calendar screen follows its ICS feed on an MQTT frame and a TRMNL frame', async (t) => {
  const feed = await feedServer(t)
  const adminEmail = uniqueEmail('screens-admin')
  const svc = await startApp(t, {
    clock,
    env: { DEVICE_POLL_INTERVAL: '0', ADMIN_EMAILS: adminEmail, SCREEN_MIN_POLL_SECONDS: '1', SCREEN_POLL_TICK_MS: '100' },
  })
  const { token } = await signUpAdmin(svc, adminEmail)
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })

  const mqttFrame = await pairDevice(svc, token, { palette: 'bw', width: 800, height: 480 })
  const { c, images } = await listen(svc, mqttFrame)
  t.teardown(() => close(c))
  const setup = await (await appFetch(`${svc.url}/api/setup`, { headers: { ID: MAC, 'FW-Version': '1.8.14', Model: 'og' } })).json()
  const claimed = await call('/api/device/validate', { body: { pinCode: setup.friendly_id, name: 'Kitchen' } })
  t.equal(claimed.status, 200)
  const trmnlId = claimed.body.device.id as string
  const poll = async () =>
    (await (await appFetch(`${svc.url}/api/display`, { headers: trmnlHeaders(setup.api_key) })).json()) as { image_url: string }
  await poll()

  const created = await call('/api/screens', {
    body: {
      name: 'Family calendar',
      builtin: 'calendar',
      allowPrivate: true,
      source: { url: `${feed.url}/cal.ics`, everySeconds: 1, headers: { Authorization: 'Bearer feed-secret' } },
    },
  })
  t.equal(created.status, 201)
  const id = created.body.id as string
  t.same(created.body.source.headerNames, ['Authorization'], 'header names only')
  // The feed does not answer yet (404): the preview says there is no data, the record why.
  const early = await call(`/api/screens/${created.body.id}/preview`)
  t.match(early, { status: 422, body: { code: 'SCREEN_NO_DATA' } })
  t.match(await eventually(async () => (await call(`/api/screens/${created.body.id}`)).body.lastError), { code: 'SCREEN_SOURCE_FAILED' })
  feed.feeds.set('/cal.ics', { body: ics('Dentist', '20260610'), type: 'text/calendar' })
  now += 2000
  t.notMatch(JSON.stringify((await call(`/api/screens/${id}`)).body), /feed-secret/, 'the header value is never returned')
  await eventually(async () => (await call(`/api/screens/${id}`)).body.dataAt)
  t.ok(
    feed.seen.some((h) => h.authorization === 'Bearer feed-secret'),
    'the stored header is sent',
  )

  for (const deviceId of [mqttFrame.deviceId, trmnlId]) t.equal((await call(`/api/screens/${id}/show`, { body: { deviceId } })).status, 200)
  await eventually(async () => images.length === 1)
  const firstTrmnl = (await poll()).image_url
  t.match(firstTrmnl, /\/api\/trmnl\/images\//)

  // The feed changes and a day passes: both frames get the new picture.
  feed.feeds.set('/cal.ics', { body: ics('Birthday party', '20260611'), type: 'text/calendar' })
  now += 86_400_000
  await eventually(async () => images.length >= 2, 30_000)
  t.not(images.at(-1)!.sha256, images[0]!.sha256)
  const url = await eventually(async () => {
    const u = (await poll()).image_url
    return u !== firstTrmnl && u
  }, 30_000)
  t.match(url, `/api/trmnl/images/${trmnlId}/`, 'the TRMNL frame gets the new picture at its next poll')

  // Nothing changes: the next polls of the feed send nothing.
  const sent = images.length
  now += 5000
  await new Promise((r) => setTimeout(r, 1500))
  t.equal(images.length, sent, 'an unchanged picture is not sent again')
})

t.test('data URLs that are refused or fail leave a clear error and the last good picture', async (t) => {
  const feed = await feedServer(t)
  const adminEmail = uniqueEmail('screens-admin2')
  const svc = await startApp(t, {
    env: {
      DEVICE_POLL_INTERVAL: '0',
      ADMIN_EMAILS: adminEmail,
      SCREEN_MIN_POLL_SECONDS: '1',
      SCREEN_POLL_TICK_MS: '100',
      SCREEN_FETCH_TIMEOUT_MS: '500',
      SCREEN_FETCH_MAX_BYTES: '2000',
    },
  })
  const admin = await signUpAdmin(svc, adminEmail)
  const { token: user } = await signUp(makeClient(svc.url).client, uniqueEmail('screens-user'))
  feed.feeds.set('/ok.json', { body: JSON.stringify({ temperature: 20 }), type: 'application/json' })
  feed.feeds.set('/slow.json', { body: '{}', type: 'application/json', delayMs: 3000 })
  feed.feeds.set('/page.html', { body: '<html>hi</html>', type: 'text/html' })
  feed.feeds.set('/huge.json', { body: JSON.stringify({ x: 'y'.repeat(10_000) }), type: 'application/json' })
  const port = new URL(feed.url).port

  const screenFor = async (token: string, url: string, allowPrivate = false) => {
    const res = await jsonCall(svc.url, '/api/screens', {
      token,
      body: {
        name: url,
        template: '<p>{{ temperature }}</p>',
        source: { url, everySeconds: 60 },
        ...(allowPrivate ? { allowPrivate } : {}),
      },
    })
    t.equal(res.status, 201, url)
    return res.body.id as string
  }
  const errorOf = (token: string, id: string) =>
    eventually(async () => (await jsonCall(svc.url, `/api/screens/${id}`, { token })).body.lastError?.code as string | undefined, 15_000)

  t.equal(await errorOf(user, await screenFor(user, `${feed.url}/ok.json`)), 'SCREEN_SOURCE_FORBIDDEN', 'loopback, for a user')
  t.equal(
    await errorOf(user, await screenFor(user, `http://localhost:${port}/ok.json`)),
    'SCREEN_SOURCE_FORBIDDEN',
    'a name resolving to loopback',
  )
  t.equal(await errorOf(user, await screenFor(user, `http://[::1]:${port}/ok.json`)), 'SCREEN_SOURCE_FORBIDDEN', 'IPv6 loopback')
  t.equal(
    await errorOf(user, await screenFor(user, 'http://169.254.169.254/latest/meta-data')),
    'SCREEN_SOURCE_FORBIDDEN',
    'link-local (cloud metadata)',
  )
  t.equal(await errorOf(user, await screenFor(user, 'http://10.0.0.1/x.json')), 'SCREEN_SOURCE_FORBIDDEN', 'a private range')
  t.equal(
    await errorOf(admin.token, await screenFor(admin.token, `${feed.url}/ok.json`)),
    'SCREEN_SOURCE_FORBIDDEN',
    "an admin's screen that does not allow private addresses",
  )
  t.equal(await errorOf(admin.token, await screenFor(admin.token, `${feed.url}/slow.json`, true)), 'SCREEN_SOURCE_TIMEOUT')
  t.equal(await errorOf(admin.token, await screenFor(admin.token, `${feed.url}/page.html`, true)), 'SCREEN_SOURCE_NOT_JSON')
  t.equal(await errorOf(admin.token, await screenFor(admin.token, `${feed.url}/huge.json`, true)), 'SCREEN_SOURCE_TOO_LARGE')
  t.equal(await errorOf(admin.token, await screenFor(admin.token, `${feed.url}/missing.json`, true)), 'SCREEN_SOURCE_FAILED')

  // An allowed source works, and a frame showing it keeps its picture when the source breaks.
  const good = await screenFor(admin.token, `${feed.url}/ok.json`, true)
  await eventually(async () => (await jsonCall(svc.url, `/api/screens/${good}`, { token: admin.token })).body.dataAt)
  const dev = await pairDevice(svc, admin.token, { palette: 'bw', width: 400, height: 300 })
  const shown = await jsonCall(svc.url, `/api/screens/${good}/show`, { token: admin.token, body: { deviceId: dev.deviceId } })
  t.equal(shown.status, 200)
  feed.feeds.set('/ok.json', { body: 'not json', type: 'text/plain' })
  await jsonCall(svc.url, `/api/screens/${good}`, {
    token: admin.token,
    method: 'PATCH',
    body: { source: { url: `${feed.url}/ok.json`, everySeconds: 1 } },
  })
  t.equal(await errorOf(admin.token, good), 'SCREEN_SOURCE_NOT_JSON')
  const devRow = await jsonCall(svc.url, `/api/device/${dev.deviceId}`, { token: admin.token })
  t.equal(devRow.status, 200)
  t.equal(JSON.stringify(devRow.body).includes(shown.body.imageId), true, 'the frame keeps its last good picture')
})
