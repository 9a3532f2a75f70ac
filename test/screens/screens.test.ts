// Screens through the real app: created with a template, previewed as the frame would show it
// (its size, its panel's inks), shown on an MQTT frame that then follows the screen's data
// (pushed by the webhook), nothing sent when the converted bytes did not change, and the bad
// templates (one that does not parse, one that fails, one that loops) refused with a clear
// error on the record and in the preview while the frame keeps its last good picture.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import sharp from 'sharp'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

type Image = { imageId: string; sha256: string; width: number; height: number }

async function listen(svc: TestApp, dev: PairedDevice) {
  const c: MqttClient = await connect(mqttUrl(svc), {
    clientId: dev.clientId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
  })
  const images: Image[] = []
  c.on('message', (topic, payload) => {
    if (topic.endsWith('/image')) images.push(JSON.parse(payload.toString()) as Image)
  })
  await subscribe(c, `devices/${dev.deviceId}/+`)
  return { c, images }
}

const TEMPLATE = '<div class="box"><span class="big">{{ title }}</span><span>{{ temperature }} °C</span></div>'
const CSS = '.box{display:flex;flex-direction:column;padding:20px} .big{font-size:48px;font-weight:700}'

t.test('a screen is created, previewed at the frame size and inks, shown, and followed by an MQTT frame', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('screens'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const dev = await pairDevice(svc, token, { palette: 'bw', width: 400, height: 300 })
  const { c, images } = await listen(svc, dev)
  t.teardown(() => close(c))

  const created = await call('/api/screens', { body: { name: 'Hall', template: TEMPLATE, css: CSS, variables: { title: 'Weather' } } })
  t.equal(created.status, 201)
  const screen = created.body
  t.match(screen, { id: String, token: /^scr_/, name: 'Hall', source: null, lastError: null })
  const got = await call(`/api/screens/${screen.id}`)
  t.equal(got.status, 200)
  t.notOk('token' in got.body, 'the token is shown once')
  t.equal((await call('/api/screens')).body.screens.length, 1)

  // The preview: a 1-bit PNG at the device's size.
  const res = await appFetch(`${svc.url}/api/screens/${screen.id}/preview?deviceId=${dev.deviceId}`, {
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(res.status, 200)
  t.equal(res.headers.get('content-type'), 'image/png')
  const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata()
  t.match(meta, { width: 400, height: 300 })
  const stats = await sharp(
    Buffer.from(
      await (
        await appFetch(`${svc.url}/api/screens/${screen.id}/preview?deviceId=${dev.deviceId}`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).arrayBuffer(),
    ),
  )
    .raw()
    .toBuffer()
  t.ok(new Set(stats).size <= 2, 'only black and white on a 1-bit panel')
  t.ok(stats.includes(0), 'the text is drawn')

  // Shown: the frame gets the picture.
  const shown = await call(`/api/screens/${screen.id}/show`, { body: { deviceId: dev.deviceId } })
  t.equal(shown.status, 200)
  await eventually(async () => images.length === 1)
  t.match(images[0], { imageId: shown.body.imageId, width: 400, height: 300 })

  // Data pushed by the webhook: a new picture reaches the frame.
  const push = (body: unknown, bearer = screen.token) => jsonCall(svc.url, `/api/screens/${screen.id}/data`, { token: bearer, body })
  t.equal((await push({ temperature: 21 }, 'scr_wrong')).status, 401, 'a wrong token is refused')
  const pushed = await push({ temperature: 21 })
  t.equal(pushed.status, 200)
  t.match(pushed.body, { frames: 1, sent: 1, lastError: null })
  await eventually(async () => images.length === 2)
  t.not(images[1]!.sha256, images[0]!.sha256)

  // The same data again: the same bytes, nothing sent (no wake-up for an unchanged picture).
  const again = await push({ temperature: 21 })
  t.match(again.body, { frames: 1, sent: 0 })
  await new Promise((r) => setTimeout(r, 500))
  t.equal(images.length, 2, 'no message for an unchanged picture')

  // A template that does not parse: refused in the preview with its code, on the record too; the frame keeps its picture.
  t.equal((await call(`/api/screens/${screen.id}`, { method: 'PATCH', body: { template: '{% if %}' } })).status, 200)
  const bad = await call(`/api/screens/${screen.id}/preview?deviceId=${dev.deviceId}`)
  t.equal(bad.status, 422)
  t.match(bad.body, { code: 'SCREEN_TEMPLATE_INVALID', message: String })
  t.match((await call(`/api/screens/${screen.id}`)).body.lastError, { code: 'SCREEN_TEMPLATE_INVALID' })
  t.match((await push({ temperature: 22 })).body, { sent: 0, lastError: { code: 'SCREEN_TEMPLATE_INVALID' } })
  t.equal(images.length, 2, 'the frame keeps its last good picture')

  // A template that loops without end: stopped, the service answers other requests meanwhile.
  const loop = '{% for a in (1..100000) %}{% for b in (1..100000) %}{% endfor %}{% endfor %}'
  t.equal((await call(`/api/screens/${screen.id}`, { method: 'PATCH', body: { template: loop } })).status, 200)
  const started = Date.now()
  const [looped, other] = await Promise.all([call(`/api/screens/${screen.id}/preview`), call('/api/screens')])
  t.equal(other.status, 200)
  t.equal(looped.status, 422)
  t.match(looped.body, { code: /^SCREEN_RENDER_(TIMEOUT|MEMORY)$/ })
  t.ok(Date.now() - started < 15_000, 'stopped within its bounds')

  // A render error (a partial that does not exist: a template is one string, it includes nothing).
  await call(`/api/screens/${screen.id}`, { method: 'PATCH', body: { template: "{% include 'secrets' %}" } })
  t.match((await call(`/api/screens/${screen.id}/preview`)).body, { code: 'SCREEN_RENDER_FAILED' })

  // Fixed again (the frame is drawn again at once), the next data reaches the frame and the error is cleared.
  await call(`/api/screens/${screen.id}`, { method: 'PATCH', body: { template: TEMPLATE } })
  await eventually(async () => images.length === 3)
  const fixed = await push({ temperature: 30 })
  t.match(fixed.body, { sent: 1, lastError: null })
  await eventually(async () => images.length === 4)
  t.equal((await call(`/api/screens/${screen.id}`)).body.lastError, null)
})

t.test('screens are private to their owner; bad input is a 4xx naming it', async (t) => {
  const svc = await startApp(t)
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('owner'))
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('other'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const s = (await call('/api/screens', { body: { name: 'Mine', template: '<p>hi</p>' } })).body
  for (const [method, path, body] of [
    ['GET', `/api/screens/${s.id}`],
    ['PATCH', `/api/screens/${s.id}`, { name: 'x' }],
    ['DELETE', `/api/screens/${s.id}`],
    ['GET', `/api/screens/${s.id}/preview`],
  ] as const) {
    const res = await jsonCall(svc.url, path, { method, token: other.token, ...(body ? { body } : {}) })
    t.equal(res.status, 404, `${method} ${path} by another user`)
    t.equal(res.body.code, 'SCREEN_NOT_FOUND')
  }
  t.equal((await jsonCall(svc.url, '/api/screens')).status, 401)
  const tooOften = await call('/api/screens', {
    body: { name: 'x', template: 'x', source: { url: 'https://example.com/a.json', everySeconds: 1 } },
  })
  t.match(tooOften, { status: 400, body: { code: 'VALIDATION_ERROR', message: /everySeconds/ } })
  const badZone = await call('/api/screens', { body: { name: 'x', template: 'x', timeZone: 'Mars/Olympus' } })
  t.match(badZone, { status: 400, body: { code: 'VALIDATION_ERROR', message: /timeZone/ } })
  const priv = await call('/api/screens', { body: { name: 'x', template: 'x', allowPrivate: true } })
  t.match(priv, { status: 403, body: { code: 'FORBIDDEN' } })
  const dev = await pairDevice(svc, other.token, { palette: 'bw', width: 400, height: 300 })
  t.equal((await call(`/api/screens/${s.id}/show`, { body: { deviceId: dev.deviceId } })).status, 404, "another's frame")
  t.equal((await call(`/api/screens/${s.id}`, { method: 'DELETE' })).status, 204)
})
