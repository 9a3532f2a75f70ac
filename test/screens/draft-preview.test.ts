// Previewing an unsaved draft (POST /api/screens/{id}/preview): the draft's picture at the frame's
// size and inks, while the frame showing the screen is sent nothing and the saved screen stays as
// it was; the GET preview's access rules; a bad draft is a 4xx with its code and the screen's
// lastError untouched. Before this endpoint the console saved every pause in typing to preview it,
// which sent each half-typed draft to the frames.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import sharp from 'sharp'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

const TEMPLATE = '<div style="padding:20px;font-size:48px">{{ title }}</div>'

t.test('a draft is previewed as the frame would show it; nothing is saved or sent', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('draft'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const png = async (path: string, body?: unknown, bearer = token) => {
    const res = await appFetch(`${svc.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) }
  }
  const dev = await pairDevice(svc, token, { palette: 'bw', width: 400, height: 300 })
  const c: MqttClient = await connect(mqttUrl(svc), {
    clientId: dev.clientId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
  })
  t.teardown(() => close(c))
  const images: unknown[] = []
  c.on('message', (topic, payload) => {
    if (topic.endsWith('/image')) images.push(JSON.parse(payload.toString()))
  })
  await subscribe(c, `devices/${dev.deviceId}/+`)

  const screen = (await call('/api/screens', { body: { name: 'Hall', template: TEMPLATE, variables: { title: 'Saved' } } })).body
  t.equal((await call(`/api/screens/${screen.id}/show`, { body: { deviceId: dev.deviceId } })).status, 200)
  await eventually(async () => images.length === 1)
  const before = (await call(`/api/screens/${screen.id}`)).body
  const desired = (await call(`/api/device/${dev.deviceId}`)).body.desiredImageId

  const saved = await png(`/api/screens/${screen.id}/preview?deviceId=${dev.deviceId}`)
  const draft = await png(`/api/screens/${screen.id}/preview`, {
    template: '<div style="padding:20px;font-size:64px">{{ title }} draft</div>',
    variables: { title: 'Unsaved' },
    deviceId: dev.deviceId,
  })
  t.equal(draft.status, 200)
  t.equal(draft.type, 'image/png')
  t.not(draft.bytes.equals(saved.bytes), true, 'the draft is drawn, not the saved screen')
  t.match(await sharp(draft.bytes).metadata(), { width: 400, height: 300 }, "at the frame's size")
  const pixels = await sharp(draft.bytes).raw().toBuffer()
  t.ok(new Set(pixels).size <= 2, "in the 1-bit panel's inks")

  // Only the variables changed: the saved template with the draft's values.
  const vars = await png(`/api/screens/${screen.id}/preview`, { variables: { title: 'Other' }, deviceId: dev.deviceId })
  t.equal(vars.status, 200)
  t.not(vars.bytes.equals(saved.bytes), true, "the draft's variables are drawn")
  const same = await png(`/api/screens/${screen.id}/preview`, { deviceId: dev.deviceId })
  t.ok(same.bytes.equals(saved.bytes), 'an empty draft is the saved screen')

  // Without a frame: the default panel.
  t.match(await sharp((await png(`/api/screens/${screen.id}/preview`, { template: '<p>x</p>' })).bytes).metadata(), {
    width: 800,
    height: 480,
  })

  await new Promise((r) => setTimeout(r, 500))
  t.equal(images.length, 1, 'the frame showing the screen is sent nothing')
  const after = (await call(`/api/screens/${screen.id}`)).body
  t.same(after, before, 'the saved screen is unchanged')
  t.equal((await call(`/api/device/${dev.deviceId}`)).body.desiredImageId, desired, "the frame's picture is unchanged")

  // Bad drafts: a 4xx with the code, and the screen's record untouched.
  const bad = await call(`/api/screens/${screen.id}/preview`, { body: { template: '{% if %}', deviceId: dev.deviceId } })
  t.match(bad, { status: 422, body: { code: 'SCREEN_TEMPLATE_INVALID', message: String } })
  const failing = await call(`/api/screens/${screen.id}/preview`, { body: { template: "{% include 'secrets' %}" } })
  t.match(failing, { status: 422, body: { code: 'SCREEN_RENDER_FAILED' } })
  t.match(await call(`/api/screens/${screen.id}/preview`, { body: { template: '' } }), { status: 400, body: { code: 'VALIDATION_ERROR' } })
  t.match(await call(`/api/screens/${screen.id}/preview`, { body: { nonsense: 1 } }), { status: 400 })
  t.match(await call(`/api/screens/${screen.id}/preview`, { body: { builtin: 'nope' } }), {
    status: 400,
    body: { code: 'VALIDATION_ERROR', message: /builtin/ },
  })
  t.match(await call(`/api/screens/${screen.id}/preview`, { body: { timeZone: 'Mars/Olympus' } }), {
    status: 400,
    body: { message: /timeZone/ },
  })
  const huge = await call(`/api/screens/${screen.id}/preview`, { body: { template: 'x', css: 'y'.repeat(2_000_000) } })
  t.equal(huge.status, 413, 'a body far beyond any valid draft is refused unread')
  t.equal((await call(`/api/screens/${screen.id}`)).body.lastError, null, "a draft's failure is not the saved screen's")
  t.equal(images.length, 1)

  // A screen not created yet: its template drawn with no data.
  const fresh = await png('/api/screens/preview', { template: TEMPLATE, variables: { title: 'New' }, deviceId: dev.deviceId })
  t.equal(fresh.status, 200)
  t.match(await sharp(fresh.bytes).metadata(), { width: 400, height: 300 })
  t.match(await call('/api/screens/preview', { body: { css: 'p{}' } }), { status: 400, body: { code: 'VALIDATION_ERROR' } })
  t.match(await call('/api/screens/preview', { body: { template: '{% if %}' } }), { status: 422 })
})

t.test("a draft of another's screen, or for a frame the caller cannot read, is 404", async (t) => {
  const svc = await startApp(t)
  const owner = await signUp(makeClient(svc.url).client, uniqueEmail('draft-owner'))
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('draft-other'))
  const s = (await jsonCall(svc.url, '/api/screens', { token: owner.token, body: { name: 'Mine', template: '<p>hi</p>' } })).body
  const draft = { template: '<p>peek</p>' }
  const theirs = await jsonCall(svc.url, `/api/screens/${s.id}/preview`, { token: other.token, body: draft })
  t.match(theirs, { status: 404, body: { code: 'SCREEN_NOT_FOUND' } }, "another user's screen")
  const othersFrame = await pairDevice(svc, other.token, { palette: 'bw', width: 400, height: 300 })
  for (const path of [`/api/screens/${s.id}/preview`, '/api/screens/preview']) {
    const res = await jsonCall(svc.url, path, { token: owner.token, body: { ...draft, deviceId: othersFrame.deviceId } })
    t.equal(res.status, 404, `${path}: a frame the caller cannot read`)
  }
  t.equal((await jsonCall(svc.url, `/api/screens/${s.id}/preview`, { body: draft })).status, 401, 'signed out')
})
