// Bad input on every device endpoint: missing fields, wrong types (numbers for strings), non-hex
// colours, oversized strings, unknown fields, bad display profiles, malformed JSON, bad query
// strings. Each is a 400 {message, code} (never a 5xx), and nothing changes because of it. The
// routes devices call (init, get-init-device) ignore unknown fields instead.
import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { device, deviceInit } from '../../src/devices/tables.js'
import { appFetch } from '../helpers/app-fetch.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any
type Res = { status: number; body: Json }
type Tap = Pick<typeof t, 'equal' | 'type' | 'ok'>
type Case = { what: string; body?: unknown; raw?: string; contentType?: string | null; code?: string }

const display = { width: 800, height: 480, palette: 'gray4' }
const long = (n: number, c = 'a') => c.repeat(n)

let svc: TestApp
let alice: { token: string; id: string }
let bob: { token: string; id: string }
/** A device alice has paired. */
let paired: { deviceId: string; deviceCode: string; userCode: string; pinCode: string }
/** A device still waiting to be claimed. */
let pending: { deviceId: string; deviceCode: string; userCode: string; pinCode: string }

async function send(method: string, path: string, c: Case, token?: string): Promise<Res> {
  const headers: Record<string, string> = {}
  if (token) headers.authorization = `Bearer ${token}`
  let body: string | undefined
  if (c.raw !== undefined) body = c.raw
  else if ('body' in c) body = JSON.stringify(c.body)
  const contentType = c.contentType === undefined ? (body === undefined ? undefined : 'application/json') : c.contentType
  if (contentType) headers['content-type'] = contentType
  const res = await appFetch(`${svc.url}${path}`, { method, headers, body })
  const text = await res.text()
  let parsed: Json = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed }
}

async function api(path: string, opts: { method?: string; token?: string; body?: unknown } = {}): Promise<Res> {
  return send(
    opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    path,
    opts.body === undefined ? { what: '' } : { what: '', body: opts.body },
    opts.token,
  )
}

/** Each case is answered 400 {message, code}; none is a server error. */
async function expectBad(t: Tap, method: string, path: string, cases: Case[], token?: string) {
  for (const c of cases) {
    const res = await send(method, path, c, token)
    t.equal(res.status, 400, `${method} ${path.replace(/[0-9a-f-]{36}/, ':id')} ${c.what}: 400`)
    t.ok(res.status < 500, `${c.what}: not a server error`)
    t.type(res.body?.message, 'string', `${c.what}: has a message`)
    t.equal(res.body?.code, c.code ?? 'VALIDATION_ERROR', `${c.what}: code ${c.code ?? 'VALIDATION_ERROR'}`)
  }
}

const malformed: Case[] = [
  { what: 'malformed JSON', raw: '{"deviceId": ', code: 'INVALID_JSON' },
  { what: 'an empty JSON body (no body, where one is required)', raw: '', code: 'VALIDATION_ERROR' },
  { what: 'a JSON array', body: [] },
  { what: 'JSON null', raw: 'null' },
  { what: 'a JSON string', body: 'deviceId' },
]

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const c1 = makeClient(svc.url).client
  const c2 = makeClient(svc.url).client
  const [a, b] = await Promise.all([signUp(c1, uniqueEmail('alice')), signUp(c2, uniqueEmail('bob'))])
  alice = { token: a.token, id: a.userId }
  bob = { token: b.token, id: b.userId }
  const i1 = await api('/api/device/init', { body: { display } })
  paired = i1.body
  const claimed = await api('/api/device/validate', {
    token: alice.token,
    body: { pinCode: paired.pinCode, name: 'Original', color: '#123456' },
  })
  if (claimed.status !== 200) throw new Error(`setup claim failed: ${claimed.status}`)
  const polled = await api('/api/device/get-init-device', { body: { deviceId: paired.deviceId, deviceCode: paired.deviceCode } })
  if (!polled.body.credentials) throw new Error('setup: no credentials')
  pending = (await api('/api/device/init', { body: { display } })).body
})

t.test('POST /api/device/init', async (t) => {
  const count = async () => Number((await svc.app.database.db.select({ n: sql<number>`count(*)` }).from(deviceInit))[0]?.n)
  const before = await count()
  await expectBad(t, 'POST', '/api/device/init', [
    { what: 'missing display', body: {} },
    { what: 'missing display, device information only', body: { model: 'Frame' } },
    { what: 'display null', body: { display: null } },
    { what: 'display a string', body: { display: '800x480' } },
    { what: 'display without width', body: { display: { height: 480, palette: 'bw' } } },
    { what: 'display without palette', body: { display: { width: 800, height: 480 } } },
    { what: 'width below range', body: { display: { ...display, width: 8 } } },
    { what: 'width above range', body: { display: { ...display, width: 5000 } } },
    { what: 'width negative', body: { display: { ...display, width: -800 } } },
    { what: 'width not an integer', body: { display: { ...display, width: 800.5 } } },
    { what: 'width a string', body: { display: { ...display, width: '800' } } },
    { what: 'height zero', body: { display: { ...display, height: 0 } } },
    { what: 'bad palette', body: { display: { ...display, palette: 'rainbow' } } },
    { what: 'palette a number', body: { display: { ...display, palette: 7 } } },
    { what: 'bad fit', body: { display: { ...display, fit: 'stretch' } } },
    { what: 'bad dither', body: { display: { ...display, dither: 'random' } } },
    { what: 'model a number', body: { display, model: 42 } },
    { what: 'serial a boolean', body: { display, serial: true } },
    { what: 'oversized model', body: { display, model: long(101) } },
    { what: 'oversized firmware', body: { display, firmware: long(51) } },
    { what: 'oversized manufacturer', body: { display, manufacturer: long(101) } },
    { what: 'oversized serial', body: { display, serial: long(101) } },
    ...malformed,
  ])
  const huge = await send('POST', '/api/device/init', { what: 'huge', body: { display, model: long(2 * 1024 * 1024) } })
  t.equal(huge.status, 413, 'a body above the size limit is 413')
  t.equal(huge.body.code, 'PAYLOAD_TOO_LARGE')
  t.type(huge.body.message, 'string')
  t.equal(await count(), before, 'no bad init created a record')
  const good = await api('/api/device/init', { body: { display: { width: 16, height: 3840, palette: 'color', fit: 'contain' } } })
  t.equal(good.status, 200, 'the bounds themselves are accepted')
})

t.test('device routes ignore fields they do not know (a newer firmware pairs with an older service)', async (t) => {
  const init = await api('/api/device/init', {
    body: { display: { ...display, depth: 8 }, owner: 'me', deviceId: 'mine', firmwareVersion: '2.0.0', model: 'Frame' },
  })
  t.equal(init.status, 200, 'init with unknown fields, also in display')
  t.not(init.body.deviceId, 'mine', 'a deviceId sent by the device is ignored: the service picks it')
  const [row] = await svc.app.database.db.select().from(deviceInit).where(eq(deviceInit.id, init.body.deviceId))
  t.same(Object.keys(row!.display).sort(), ['fit', 'height', 'palette', 'width'], 'only the known display fields are stored')
  t.same(row!.info, { model: 'Frame' }, 'only the known device information is stored')
  const poll = await api('/api/device/get-init-device', {
    body: { deviceId: init.body.deviceId, deviceCode: init.body.deviceCode, status: 'approved', battery: 80 },
  })
  t.equal(poll.status, 200, 'a poll with unknown fields')
  t.equal(poll.body.status, 'pending', 'and they change nothing')
  const doc = (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as {
    paths: Record<string, { post: { requestBody: { content: { 'application/json': { schema: { additionalProperties?: boolean } } } } } }>
  }
  for (const path of ['/api/device/init', '/api/device/get-init-device']) {
    t.equal(
      doc.paths[path]!.post.requestBody.content['application/json'].schema.additionalProperties,
      true,
      `the document says ${path} takes unknown fields`,
    )
  }
})

t.test('POST /api/device/validate', async (t) => {
  const code = { pinCode: pending.pinCode }
  await expectBad(
    t,
    'POST',
    '/api/device/validate',
    [
      { what: 'missing name', body: { ...code } },
      { what: 'empty name', body: { ...code, name: '' } },
      { what: 'oversized name', body: { ...code, name: long(65) } },
      { what: 'name a number', body: { ...code, name: 42 } },
      { what: 'neither pinCode nor userCode', body: { name: 'Frame' } },
      { what: 'non-hex color', body: { ...code, name: 'Frame', color: 'red' } },
      { what: 'color with a non-hex digit', body: { ...code, name: 'Frame', color: '#12345g' } },
      { what: 'short color', body: { ...code, name: 'Frame', color: '#fff' } },
      { what: 'color with alpha', body: { ...code, name: 'Frame', color: '#12345678' } },
      { what: 'color a number', body: { ...code, name: 'Frame', color: 123456 } },
      { what: 'icon with spaces', body: { ...code, name: 'Frame', icon: 'Bad Icon' } },
      { what: 'oversized icon', body: { ...code, name: 'Frame', icon: long(33) } },
      { what: 'icon a number', body: { ...code, name: 'Frame', icon: 5 } },
      { what: 'oversized description', body: { ...code, name: 'Frame', description: long(501) } },
      { what: 'description a boolean', body: { ...code, name: 'Frame', description: false } },
      { what: 'selectedModel with a space', body: { ...code, name: 'Frame', selectedModel: 'my model' } },
      { what: 'oversized selectedModel', body: { ...code, name: 'Frame', selectedModel: long(65) } },
      { what: 'selectedModel a number', body: { ...code, name: 'Frame', selectedModel: 7 } },
      { what: 'organizationId a number', body: { ...code, name: 'Frame', organizationId: 12 } },
      { what: 'empty organizationId', body: { ...code, name: 'Frame', organizationId: '' } },
      { what: 'oversized organizationId', body: { ...code, name: 'Frame', organizationId: long(65) } },
      { what: 'userCode not a UUID', body: { userCode: 'not-a-uuid', name: 'Frame' } },
      { what: 'userCode a number', body: { userCode: 1234, name: 'Frame' } },
      { what: 'oversized pinCode', body: { pinCode: long(17, 'B'), name: 'Frame' } },
      { what: 'pinCode a number', body: { pinCode: 12345678, name: 'Frame' } },
      { what: 'empty pinCode', body: { pinCode: '', name: 'Frame' } },
      { what: 'unknown field userId', body: { ...code, name: 'Frame', userId: bob.id } },
      { what: 'unknown field status', body: { ...code, name: 'Frame', status: 'approved' } },
      ...malformed,
    ],
    alice.token,
  )
  t.equal(
    (await api('/api/device/get-init-device', { body: { deviceId: pending.deviceId, deviceCode: pending.deviceCode } })).body.status,
    'pending',
    'the record is still pending',
  )
  // None of the bad requests counted as a wrong code: the user is not blocked.
  const good = await api('/api/device/validate', { token: alice.token, body: { ...code, name: 'Second', color: '#ABCDEF' } })
  t.equal(good.status, 200, 'a good request still claims the device')
  t.equal(good.body.device.userId, alice.id)
})

t.test('POST /api/device/deny', async (t) => {
  const fresh = (await api('/api/device/init', { body: { display } })).body
  await expectBad(
    t,
    'POST',
    '/api/device/deny',
    [
      { what: 'neither pinCode nor userCode', body: {} },
      { what: 'pinCode a number', body: { pinCode: 5 } },
      { what: 'oversized pinCode', body: { pinCode: long(17, 'B') } },
      { what: 'userCode not a UUID', body: { userCode: 'nope' } },
      { what: 'unknown field', body: { pinCode: fresh.pinCode, reason: 'spam' } },
      { what: 'a deviceId instead of a code', body: { deviceId: fresh.deviceId } },
      ...malformed,
    ],
    bob.token,
  )
  t.equal(
    (await api('/api/device/get-init-device', { body: { deviceId: fresh.deviceId, deviceCode: fresh.deviceCode } })).body.status,
    'pending',
    'nothing was denied',
  )
})

t.test('POST /api/device/get-init-device', async (t) => {
  const fresh = (await api('/api/device/init', { body: { display } })).body
  await expectBad(t, 'POST', '/api/device/get-init-device', [
    { what: 'empty body', body: {} },
    { what: 'missing deviceId', body: { deviceCode: fresh.deviceCode } },
    { what: 'missing deviceCode', body: { deviceId: fresh.deviceId } },
    { what: 'deviceId a number', body: { deviceId: 123, deviceCode: fresh.deviceCode } },
    { what: 'empty deviceId', body: { deviceId: '', deviceCode: fresh.deviceCode } },
    { what: 'oversized deviceId', body: { deviceId: long(65), deviceCode: fresh.deviceCode } },
    { what: 'oversized deviceCode', body: { deviceId: fresh.deviceId, deviceCode: long(65) } },
    { what: 'deviceCode null', body: { deviceId: fresh.deviceId, deviceCode: null } },
    { what: 'deviceId an array', body: { deviceId: [fresh.deviceId], deviceCode: fresh.deviceCode } },
    ...malformed,
  ])
  const ok = await api('/api/device/get-init-device', { body: { deviceId: fresh.deviceId, deviceCode: fresh.deviceCode } })
  t.equal(ok.status, 200)
  t.equal(ok.body.status, 'pending', 'the record is unchanged')
})

const idCases = (): Case[] => [
  { what: 'missing deviceId', body: {} },
  { what: 'deviceId a number', body: { deviceId: 5 } },
  { what: 'deviceId null', body: { deviceId: null } },
  { what: 'empty deviceId', body: { deviceId: '' } },
  { what: 'oversized deviceId', body: { deviceId: long(65) } },
  { what: 'deviceId an array', body: { deviceId: [paired.deviceId] } },
  { what: 'deviceId an object', body: { deviceId: { id: paired.deviceId } } },
  { what: 'unknown field', body: { deviceId: paired.deviceId, force: true } },
  ...malformed,
]

const secretHash = async () =>
  (await svc.app.database.db.select({ h: device.secretHash }).from(device).where(eq(device.id, paired.deviceId)))[0]?.h

t.test('POST /api/device/disconnect', async (t) => {
  await expectBad(t, 'POST', '/api/device/disconnect', [...idCases(), { what: 'no body at all', contentType: null }], alice.token)
  t.ok(await secretHash(), 'the device was not disconnected')
  t.equal(
    (await api('/api/device/get-init-device', { body: { deviceId: paired.deviceId, deviceCode: paired.deviceCode } })).body.status,
    'active',
  )
})

t.test('DELETE /api/device/delete', async (t) => {
  const jwt = (await api('/api/auth/token', { token: alice.token })).body.token as string
  t.type(jwt, 'string')
  const cases = [...idCases(), { what: 'no body at all', contentType: null }]
  await expectBad(t, 'DELETE', '/api/device/delete', cases, jwt)
  await expectBad(t, 'DELETE', '/api/device/delete', cases.slice(0, 3), alice.token)
  const still = await api(`/api/device/${paired.deviceId}`, { token: alice.token })
  t.equal(still.status, 200, 'the device was not deleted')
})

t.test('PATCH /api/device/:id', async (t) => {
  const path = `/api/device/${paired.deviceId}`
  await expectBad(
    t,
    'PATCH',
    path,
    [
      { what: 'no fields', body: {} },
      { what: 'name a number', body: { name: 5 } },
      { what: 'empty name', body: { name: '' } },
      { what: 'oversized name', body: { name: long(65) } },
      { what: 'non-hex color', body: { color: 'blue' } },
      { what: 'color without #', body: { color: 'abcdef' } },
      { what: 'color with alpha', body: { color: '#abcdef00' } },
      { what: 'color a number', body: { color: 0xabcdef } },
      { what: 'oversized description', body: { description: long(501) } },
      { what: 'description null', body: { description: null } },
      { what: 'icon in upper case', body: { icon: 'UPPER' } },
      { what: 'oversized icon', body: { icon: long(33) } },
      { what: 'empty selectedModel', body: { selectedModel: '' } },
      { what: 'selectedModel a number', body: { selectedModel: 3 } },
      { what: 'unknown field userId', body: { userId: bob.id } },
      { what: 'unknown field isActive', body: { name: 'x', isActive: true } },
      { what: 'unknown field organization_id', body: { organization_id: 'org' } },
      { what: 'unknown field pinCode', body: { pinCode: 'BBBB-BBBB' } },
      { what: 'bad dither', body: { display: { dither: 'random' } } },
      { what: 'display without dither', body: { display: {} } },
      { what: 'display size', body: { display: { width: 400 } } },
      { what: 'display null', body: { display: null } },
      ...malformed,
    ],
    alice.token,
  )
  await expectBad(t, 'PATCH', `/api/device/${long(65)}`, [{ what: 'oversized id in the path', body: { name: 'x' } }], alice.token)
  const after = await api(path, { token: alice.token })
  t.equal(after.status, 200)
  t.equal(after.body.name, 'Original', 'the name is unchanged')
  t.equal(after.body.color, '#123456', 'the colour is unchanged')
  t.equal(after.body.userId, alice.id, 'the owner is unchanged')
  t.same(after.body.display, { ...display, fit: 'cover' }, 'the display is unchanged')
  t.equal(after.body.isActive, false)
})

t.test('GET /api/device/:id and its events', async (t) => {
  await expectBad(t, 'GET', `/api/device/${long(65)}`, [{ what: 'oversized id' }], alice.token)
  await expectBad(t, 'GET', `/api/device/${long(65)}/events`, [{ what: 'oversized id' }], alice.token)
  const ev = `/api/device/${paired.deviceId}/events`
  for (const [query, what, code] of [
    ['limit=0', 'limit 0', undefined],
    ['limit=101', 'limit above 100', undefined],
    ['limit=-1', 'negative limit', undefined],
    ['limit=abc', 'limit not a number', undefined],
    ['limit=1.5', 'limit not an integer', undefined],
    [`cursor=${long(201)}`, 'oversized cursor', undefined],
    ['cursor=not-a-cursor', 'garbage cursor', 'INVALID_CURSOR'],
    [`cursor=${Buffer.from('yesterday|x').toString('base64url')}`, 'cursor with a bad date', 'INVALID_CURSOR'],
    [`cursor=${Buffer.from('2024-01-01T00:00:00.000Z|').toString('base64url')}`, 'cursor without an id', 'INVALID_CURSOR'],
    ['order=asc', 'unknown query parameter', undefined],
  ] as const) {
    await expectBad(t, 'GET', `${ev}?${query}`, [{ what, code }], alice.token)
  }
  const ok = await api(`${ev}?limit=100`, { token: alice.token })
  t.equal(ok.status, 200)
  t.ok(ok.body.events.length >= 2, 'the events are there')
})
