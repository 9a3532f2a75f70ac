// Headers a frame (or anyone) declares are untrusted: prototype names as Model or log levels,
// fractional or huge timestamps, weak Ed25519 keys never break a device or the device list (issue 30, items 4 and 5).
import { eq } from 'drizzle-orm'
import t from 'tap'
import { device } from '../../src/devices/tables.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { appFetch } from '../helpers/app-fetch.js'

async function get(url: string, headers: Record<string, string>) {
  const res = await appFetch(url, { headers })
  return { status: res.status, body: await res.json() }
}

// One app for the file: each test has a user and MAC addresses of its own, and the six setups in
// all stay under /api/setup's ten a minute from one address (an app start is about 1.2 s of CPU).
let svc: TestApp
t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
})

t.test('a Model of __proto__, constructor or toString pairs a device like any unknown board', async (t) => {
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('proto'))
  for (const [i, model] of ['__proto__', 'constructor', 'toString', 'hasOwnProperty'].entries()) {
    const mac = `A0:B7:65:1C:2D:${(0x40 + i).toString(16).toUpperCase()}`
    const s = await get(`${svc.url}/api/setup`, { ID: mac, 'FW-Version': '1.7.0', Model: model })
    t.equal(s.status, 200, `${model}: setup`)
    const claimed = await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: s.body.friendly_id, name: model } })
    t.equal(claimed.status, 200, `${model}: claimed ${JSON.stringify(claimed.body).slice(0, 200)}`)
    t.match(claimed.body.device?.display, { width: 800, height: 480 }, `${model}: the default panel`)
    const d = await get(`${svc.url}/api/display`, { ID: mac, 'Access-Token': s.body.api_key, Model: model, 'FW-Version': '1.7.0' })
    t.equal(d.status, 200, `${model}: display`)
    const log = await appFetch(`${svc.url}/api/log`, {
      method: 'POST',
      headers: { ID: mac, 'Access-Token': s.body.api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ logs: [{ message: 'x', level: model, created_at: 1_700_000_000 }] }),
    })
    t.equal(log.status, 204, `${model}: a log level of that name`)
    const one = await jsonCall(svc.url, `/api/device/${claimed.body.device.id}`, { token })
    t.equal(one.status, 200, `${model}: get`)
    const patched = await jsonCall(svc.url, `/api/device/${claimed.body.device.id}`, {
      token,
      method: 'PATCH',
      body: { name: `${model} 2` },
    })
    t.equal(patched.status, 200, `${model}: patch`)
  }
  const list = await jsonCall(svc.url, '/api/device', { token })
  t.equal(list.status, 200, 'the device list')
  t.equal(list.body.devices.length, 4)
})

t.test('a fractional X-Timestamp and weak or non-canonical Ed25519 keys are refused with 401, never a 500', async (t) => {
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('weak'))
  const mac = 'A0:B7:65:1C:2D:50'
  const s = await get(`${svc.url}/api/setup`, { ID: mac, 'FW-Version': '1.7.0', Model: 'og' })
  await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: s.body.friendly_id, name: 'Weak' } })
  const poll = (extra: Record<string, string>) =>
    get(`${svc.url}/api/display`, { ID: mac, 'Access-Token': s.body.api_key, Model: 'og', 'FW-Version': '1.7.0', ...extra })
  const key = `01${'00'.repeat(31)}`
  // R = the identity, S = 0: verifies for every message under a small-order key.
  const forged = `01${'00'.repeat(31)}${'00'.repeat(32)}`
  const at = Date.now()
  t.match(
    await poll({ 'X-Public-Key': 'ab'.repeat(32), 'X-Signature': 'cd'.repeat(64), 'X-Timestamp': `${at}.5` }),
    { status: 401, body: { code: 'UNAUTHORIZED', message: /whole milliseconds/ } },
    'a fractional X-Timestamp',
  )
  t.match(await poll({ 'X-Public-Key': key, 'X-Signature': forged, 'X-Timestamp': String(at) }), {
    status: 401,
    body: { message: /weak or non-canonical/ },
  })
  t.match(
    await poll({ 'X-Public-Key': key, 'X-Signature': forged, 'X-Timestamp': String(at + 1) }),
    { status: 401 },
    'and it was never bound',
  )
  // y = p (2^255 − 19), not reduced: non-canonical.
  const nonCanonical = `ed${'ff'.repeat(30)}7f`
  t.match(await poll({ 'X-Public-Key': nonCanonical, 'X-Signature': forged, 'X-Timestamp': String(at + 2) }), { status: 401 })
  // The order-8 points and the point of order 2.
  for (const weak of [
    '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
    'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
    `ec${'ff'.repeat(30)}7f`,
    '00'.repeat(32),
  ])
    t.match(await poll({ 'X-Public-Key': weak, 'X-Signature': forged, 'X-Timestamp': String(at + 3) }), { status: 401 }, weak)
  t.equal((await poll({})).body.status, 0, 'unsigned still works: no key was bound')
})

t.test('a stored device record that cannot be read is a 409 saying how to repair it, never a 500 for the whole list', async (t) => {
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('unreadable'))
  const mac = 'A0:B7:65:1C:2D:60'
  const s = await get(`${svc.url}/api/setup`, { ID: mac, 'FW-Version': '1.7.0', Model: 'og' })
  const claimed = await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: s.body.friendly_id, name: 'Broken' } })
  const other = await jsonCall(svc.url, '/api/device/init', { body: { display: { width: 800, height: 480, palette: 'bw' } } })
  await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: other.body.pinCode, name: 'Fine' } })
  const id = claimed.body.device.id as string
  // What a Model of __proto__ stored before the fix: a display without a size.
  await svc.app.database.db
    .update(device)
    .set({ display: { fit: 'cover' } as never })
    .where(eq(device.id, id))

  const list = await jsonCall(svc.url, '/api/device', { token })
  t.equal(list.status, 200, 'the list still answers')
  t.same(
    list.body.devices.map((d: { name: string }) => d.name),
    ['Fine'],
  )
  t.match(list.body.unreadable, [{ id, name: 'Broken', code: 'DEVICE_RECORD_UNREADABLE', message: /next poll.*delet/ }])
  t.match(await jsonCall(svc.url, `/api/device/${id}`, { token }), { status: 409, body: { code: 'DEVICE_RECORD_UNREADABLE' } })
  const before = await svc.app.database.db.select().from(device).where(eq(device.id, id))
  t.match(await jsonCall(svc.url, `/api/device/${id}`, { token, method: 'PATCH', body: { name: 'x' } }), { status: 409 })
  const after = await svc.app.database.db.select().from(device).where(eq(device.id, id))
  t.equal(after[0]?.name, 'Broken', 'a refused change is not stored')
  t.equal(after[0]?.desiredConfigVersion, before[0]?.desiredConfigVersion, 'and announces no new config')
  // The frame's next poll says its panel: repaired.
  t.equal(
    (await get(`${svc.url}/api/display`, { ID: mac, 'Access-Token': s.body.api_key, Model: 'og', 'FW-Version': '1.7.0' })).status,
    200,
  )
  t.match(await jsonCall(svc.url, `/api/device/${id}`, { token }), { status: 200, body: { display: { width: 800, height: 480 } } })
})
