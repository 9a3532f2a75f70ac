// A TRMNL recipe imported through the API and drawn; a screen as a playlist item, sent by the
// scheduler at its turn, after which the frame follows the screen's data; a screen in a playlist
// cannot be deleted from under it.
import { readFileSync } from 'node:fs'
import type { MqttClient } from 'mqtt'
import sharp from 'sharp'
import t from 'tap'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

const EXAMPLE = new URL('../../src/screens/recipes/examples/daily-quote/src/', import.meta.url)
const recipeFiles = () =>
  Object.fromEntries(['settings.yml', 'full.liquid'].map((f) => [`src/${f}`, readFileSync(new URL(f, EXAMPLE), 'utf8')]))

let now = Date.parse('2026-06-01T08:00:00Z')
const clock = () => new Date(now)

t.test('a TRMNL recipe imports and renders; a screen plays from a playlist and then follows its data', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0', SCREEN_POLL_TICK_MS: '100' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('recipes'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })

  const imported = await call('/api/screens/recipes', { body: { files: recipeFiles() } })
  t.equal(imported.status, 201)
  t.match(imported.body, { name: 'Daily Quote', token: /^scr_/, css: /\.layout/ })
  const png = await appFetch(`${svc.url}/api/screens/${imported.body.id}/preview`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(png.status, 200)
  const pixels = await sharp(Buffer.from(await png.arrayBuffer()))
    .raw()
    .toBuffer()
  t.ok(pixels.includes(0), 'the recipe draws something')
  t.equal((await call(`/api/screens/${imported.body.id}`)).body.lastError, null)
  const broken = await call('/api/screens/recipes', { body: { files: { 'src/settings.yml': 'strategy: carrier-pigeon\n' } } })
  t.equal(broken.status, 400)
  t.equal(broken.body.code, 'RECIPE_INVALID')

  // A screen in a playlist, on a frame's day plan.
  const dev = await pairDevice(svc, token, { palette: 'gray4', width: 400, height: 300 })
  const c: MqttClient = await connect(mqttUrl(svc), {
    clientId: dev.clientId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
  })
  t.teardown(() => close(c))
  const images: Array<{ imageId: string; sha256: string }> = []
  c.on('message', (topic, payload) => {
    if (topic.endsWith('/image')) images.push(JSON.parse(payload.toString()))
  })
  await subscribe(c, `devices/${dev.deviceId}/+`)
  const screen = (
    await call('/api/screens', { body: { name: 'Count', template: '<p style="font-size:64px">{{ count | default: 0 }}</p>' } })
  ).body
  const playlist = await call('/api/playlists', {
    body: { name: 'Screens', mode: 'sequential', itemSeconds: 3600, items: [{ kind: 'screen', screenId: screen.id }] },
  })
  t.equal(playlist.status, 201)
  t.match(playlist.body.items, [{ kind: 'screen', screenId: screen.id }])
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('recipes-other'))
  const refused = await jsonCall(svc.url, '/api/playlists', {
    token: other.token,
    body: { name: 'x', mode: 'sequential', itemSeconds: 3600, items: [{ kind: 'screen', screenId: screen.id }] },
  })
  t.match(refused, { status: 404, body: { code: 'SCREEN_NOT_FOUND' } }, "another's screen")
  const put = await call(`/api/device/${dev.deviceId}/schedule`, {
    method: 'PUT',
    body: {
      timeZone: 'UTC',
      rules: [{ playlistId: playlist.body.id, days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from: '00:00', to: '24:00' }],
      sleep: [],
    },
  })
  t.equal(put.status, 200)
  await svc.app.scheduler!.tick()
  await eventually(async () => images.length === 1)

  // Its data changes: the frame gets the new picture without waiting for a turn.
  const pushed = await jsonCall(svc.url, `/api/screens/${screen.id}/data`, { token: screen.token, body: { count: 42 } })
  t.match(pushed.body, { frames: 1, sent: 1 })
  await eventually(async () => images.length === 2)
  t.not(images[1]!.sha256, images[0]!.sha256)

  const del = await call(`/api/screens/${screen.id}`, { method: 'DELETE' })
  t.match(del, { status: 409, body: { code: 'SCREEN_IN_USE' } })

  // A built-in clock, shown now, is drawn again as the minutes pass.
  const clockScreen = await call('/api/screens', { body: { name: 'Clock', builtin: 'clock', timeZone: 'Europe/Berlin' } })
  t.equal(clockScreen.status, 201)
  t.equal((await call(`/api/screens/${clockScreen.body.id}/show`, { body: { deviceId: dev.deviceId } })).status, 200)
  await eventually(async () => images.length === 3)
  now += 61_000
  await eventually(async () => images.length === 4, 15_000)
  t.not(images[3]!.sha256, images[2]!.sha256, 'the next minute is a new picture')
  const unknown = await call('/api/screens', { body: { name: 'x', builtin: 'lava-lamp' } })
  t.match(unknown, { status: 400, body: { code: 'VALIDATION_ERROR', message: /builtin/ } })
})
