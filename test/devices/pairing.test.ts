// The pairing flow over HTTP, as a device and its owner see it: init → validate (pinCode or
// userCode) → the device polls get-init-device and receives its MQTT credentials once → list, get,
// patch → disconnect → pair again → delete (JWT or session token). Also every state and refusal of
// the initialisation record, the record shapes of the interface, events with cursor pagination,
// the sweeper, SLOW_DOWN and two users racing for one code.
import { createHash, randomUUID } from 'node:crypto'
import { eq } from 'drizzle-orm'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { jsonCall, type Json, type Res } from '../helpers/http.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { device, deviceInit } from '../../src/devices/tables.js'
import { event } from '../../src/events/tables.js'
import { appFetch } from '../helpers/app-fetch.js'

type Tap = Pick<typeof t, 'equal' | 'type' | 'ok' | 'match' | 'same' | 'not'>

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const pinPattern = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/
const base64url43 = /^[A-Za-z0-9_-]{43}$/

/** The interface's Device record, in its order. */
const deviceFields = [
  'id',
  'name',
  'userId',
  'pinCode',
  'isSynced',
  'icon',
  'description',
  'color',
  'created_at',
  'isActive',
  'selectedModel',
]
/** The interface's Device initialisation record: the Device fields plus these. */
const initFields = [...deviceFields, 'organization_id', 'eventId', 'deviceCode', 'userCode', 'status', 'expires_at']
/** What GET /api/device/:id adds to the Device record. */
const detailFields = [...deviceFields, 'organization_id', 'display', 'info', 'last_seen_at', 'status', 'desiredImageId']

const display = { width: 800, height: 480, palette: 'spectra6' }
const info = { model: 'Frame 7.3', firmware: '1.4.2', manufacturer: 'Acme', serial: 'SN-0001' }

let svc: TestApp

t.before(async () => {
  // No poll interval (no waiting between polls); the sweeper far away so only reads expire records.
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', DEVICE_SWEEP_INTERVAL: '86400' } })
})

const call = jsonCall

const api = (path: string, opts: { method?: string; token?: string; body?: unknown } = {}) => call(svc.url, path, opts)

async function person(prefix: string) {
  const { client } = makeClient(svc.url)
  const { token, userId } = await signUp(client, uniqueEmail(prefix), 'correct-horse-battery', `${prefix} person`)
  return { token, id: userId }
}

async function initDevice(base = svc.url) {
  const res = await call(base, '/api/device/init', { body: { display, ...info } })
  if (res.status !== 200) throw new Error(`init failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { deviceId: string; deviceCode: string; userCode: string; pinCode: string; expires_at: string; interval: number }
}

const poll = (deviceId: string, deviceCode: string, base = svc.url) =>
  call(base, '/api/device/get-init-device', { body: { deviceId, deviceCode } })
const validate = (token: string, body: Record<string, unknown>) =>
  api('/api/device/validate', { token, body: { name: 'Kitchen frame', ...body } })
/** What a person types: lower case, no dash. */
const typed = (pin: string) => pin.replace('-', '').toLowerCase()
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

function errorBody(t: Tap, res: Res, status: number, code: string, what: string) {
  t.equal(res.status, status, `${what}: status ${status}`)
  t.type(res.body?.message, 'string', `${what}: has a message`)
  t.equal(res.body?.code, code, `${what}: code ${code}`)
}

/** Every Device field with the interface's type (and the color a hex colour). */
function deviceTypes(t: Tap, d: Json, what: string) {
  for (const k of ['id', 'name', 'userId', 'pinCode', 'icon', 'description', 'selectedModel'])
    t.type(d[k], 'string', `${what}: ${k} is a string`)
  t.type(d.isSynced, 'boolean', `${what}: isSynced is a boolean`)
  t.type(d.isActive, 'boolean', `${what}: isActive is a boolean`)
  t.match(d.color, /^#[0-9a-fA-F]{6}$/, `${what}: color is hex`)
  t.match(d.created_at, iso, `${what}: created_at is ISO 8601`)
  t.ok(!Number.isNaN(Date.parse(d.created_at)), `${what}: created_at parses`)
  t.match(d.pinCode, pinPattern, `${what}: pinCode is XXXX-XXXX`)
}

/** The interface's initialisation record; `interval` and, once, `credentials` are the only additions. */
function initRecordKeys(t: Tap, rec: Json, what: string) {
  const keys = Object.keys(rec)
  for (const k of initFields) t.ok(keys.includes(k), `${what}: has ${k}`)
  t.same(
    keys.filter((k) => !initFields.includes(k)).sort(),
    'credentials' in rec ? ['credentials', 'interval'] : ['interval'],
    `${what}: nothing beyond the interface but interval${'credentials' in rec ? ' and credentials' : ''}`,
  )
}

t.test('the full flow: init, validate, credentials once, list/get/patch, disconnect, pair again, delete', async (t) => {
  const alice = await person('alice')

  // 1. The device starts pairing, with no account.
  const before = Date.now()
  const init = await api('/api/device/init', { body: { display, ...info } })
  const after = Date.now()
  t.equal(init.status, 200, 'init succeeds')
  const codes = init.body
  t.same(
    Object.keys(codes).sort(),
    [
      'deviceCode',
      'deviceId',
      'expires_at',
      'expires_in',
      'interval',
      'pinCode',
      'userCode',
      'verification_uri',
      'verification_uri_complete',
    ].sort(),
    'init answers with the codes',
  )
  t.match(codes.deviceId, uuid)
  t.match(codes.deviceCode, uuid, 'deviceCode is UUID-shaped')
  t.match(codes.userCode, uuid, 'userCode is a UUID')
  t.match(codes.pinCode, pinPattern, 'pinCode is XXXX-XXXX from the RFC 8628 alphabet')
  t.not(codes.deviceCode, codes.userCode)
  t.equal(codes.verification_uri, `${svc.url}/device`)
  t.equal(codes.verification_uri_complete, `${svc.url}/device?user_code=${codes.pinCode}`, 'the QR link carries the pin the display shows')
  t.match(codes.expires_at, iso)
  const exp = Date.parse(codes.expires_at)
  t.ok(exp >= before + 3600_000 - 1000 && exp <= after + 3600_000 + 1000, 'expires_at is one hour after now')
  t.equal(codes.expires_in, 3600)
  t.equal(codes.interval, 0, 'interval as configured')
  const page = await appFetch(codes.verification_uri_complete, { headers: { accept: 'text/html' }, redirect: 'manual' })
  t.equal(page.status, 302, "the link leads to the console's pairing screen")
  t.equal(page.headers.get('location'), `/pair?code=${codes.pinCode}`, 'with the code')
  const older = await appFetch(`${svc.url}/device?user_code=${codes.userCode}`, { redirect: 'manual' })
  t.equal(older.headers.get('location'), `/pair?userCode=${codes.userCode}`, 'an older link with the UUID still leads there')

  // 2. Before anyone claims it, the device sees a pending record with no device fields yet.
  const pending = await poll(codes.deviceId, codes.deviceCode)
  t.equal(pending.status, 200)
  initRecordKeys(t, pending.body, 'pending record')
  t.equal(pending.body.status, 'pending')
  t.equal(pending.body.id, codes.deviceId)
  t.equal(pending.body.pinCode, codes.pinCode)
  t.equal(pending.body.userCode, codes.userCode)
  t.equal(pending.body.deviceCode, codes.deviceCode)
  t.equal(pending.body.expires_at, codes.expires_at)
  t.equal(pending.body.userId, null, 'nobody has claimed it')
  t.equal(pending.body.eventId, null)
  t.equal(pending.body.organization_id, null)
  t.equal(pending.body.isActive, false)
  t.equal(pending.body.isSynced, false)
  t.notOk('credentials' in pending.body, 'no credentials while pending')

  // 3. Alice claims it with the pin as a person types it: lower case, no dash.
  const claimed = await validate(alice.token, {
    pinCode: typed(codes.pinCode),
    icon: 'kitchen',
    color: '#A1B2C3',
    description: 'By the window',
    selectedModel: 'local',
  })
  t.equal(claimed.status, 200, 'validate by pinCode succeeds')
  t.equal(claimed.body.success, true)
  t.equal(claimed.body.status, 'approved')
  t.match(claimed.body.eventId, /.+/)
  t.equal(claimed.body.organization_id, null)
  const d = claimed.body.device
  t.same(Object.keys(d).sort(), [...detailFields].sort(), 'the device detail fields')
  t.equal(d.status, null, 'nothing reported yet')
  t.equal(d.desiredImageId, null, 'nothing sent yet')
  deviceTypes(t, d, 'claimed device')
  t.equal(d.id, codes.deviceId, 'the device keeps the id it paired with')
  t.equal(d.userId, alice.id)
  t.equal(d.name, 'Kitchen frame')
  t.equal(d.icon, 'kitchen')
  t.equal(d.color, '#a1b2c3', 'the colour is stored in lower case')
  t.equal(d.description, 'By the window')
  t.equal(d.selectedModel, 'local')
  t.equal(d.pinCode, codes.pinCode)
  t.same(d.display, { ...display, fit: 'cover' }, 'the display profile from init')
  t.same(d.info, info, 'the device information from init')
  t.equal(d.last_seen_at, null)

  // 4. The device's next poll carries the credentials, exactly once.
  const approved = await poll(codes.deviceId, codes.deviceCode)
  t.equal(approved.status, 200)
  const rec = approved.body
  initRecordKeys(t, rec, 'record with credentials')
  deviceTypes(t, rec, 'init record')
  t.equal(rec.status, 'active', 'handing out credentials makes the record active')
  t.equal(rec.eventId, claimed.body.eventId, 'eventId is the device.paired event')
  t.equal(rec.userId, alice.id)
  t.equal(rec.name, 'Kitchen frame')
  t.equal(rec.color, '#a1b2c3')
  t.match(rec.deviceCode, uuid)
  t.match(rec.userCode, uuid)
  t.match(rec.expires_at, iso)
  const creds = rec.credentials
  t.same(Object.keys(creds).sort(), ['clientId', 'firmwareKey', 'mqttUrl', 'password', 'topics', 'username', 'websocketUrl'])
  t.equal(Buffer.from(creds.firmwareKey, 'base64').length, 32, 'the firmware key is a raw Ed25519 public key')
  t.equal(creds.username, codes.deviceId, 'username is the deviceId')
  t.match(creds.password, base64url43, 'password is 256 bits in base64url (43 characters)')
  t.equal(Buffer.from(creds.password, 'base64url').length, 32)
  t.equal(creds.clientId, codes.deviceId)
  t.match(creds.mqttUrl, /^mqtts?:\/\//)
  t.equal(new URL(creds.mqttUrl).port, String(svc.app.mqttPort), 'the port the broker listens on (MQTT_PORT 0 picked it), never 0')
  // Spelled out, not built with src/mqtt/contract.ts: this pins the wire format devices are given.
  t.same(creds.topics, {
    prompt: `devices/${codes.deviceId}/prompt`,
    image: `devices/${codes.deviceId}/image`,
    config: `devices/${codes.deviceId}/config`,
    cmd: `devices/${codes.deviceId}/cmd`,
    ota: `devices/${codes.deviceId}/ota`,
    state: `devices/${codes.deviceId}/state`,
    status: `devices/${codes.deviceId}/up/status`,
    ack: `devices/${codes.deviceId}/up/ack`,
    log: `devices/${codes.deviceId}/up/log`,
    otaProgress: `devices/${codes.deviceId}/up/ota`,
  })

  // Only the secret's SHA-256 is stored.
  const db = svc.app.database.db
  const [row] = await db.select().from(device).where(eq(device.id, codes.deviceId))
  t.equal(row?.secretHash, sha256(creds.password), 'the device row holds the SHA-256 of the secret')
  t.notOk(JSON.stringify(row).includes(creds.password), 'the secret itself is stored nowhere in the device row')
  const [initRow] = await db.select().from(deviceInit).where(eq(deviceInit.id, codes.deviceId))
  t.notOk(JSON.stringify(initRow).includes(creds.password), 'nor in the initialisation row')
  t.notOk(JSON.stringify(initRow).includes(codes.deviceCode), 'the device code is not stored in clear either')

  const again = await poll(codes.deviceId, codes.deviceCode)
  t.equal(again.status, 200)
  t.equal(again.body.status, 'active')
  t.notOk('credentials' in again.body, 'a second poll gets no credentials')
  initRecordKeys(t, again.body, 'second poll')

  // 5. A second device, claimed by its userCode (the QR-code path).
  const second = await initDevice()
  const byUserCode = await validate(alice.token, { userCode: second.userCode, name: 'Hall frame' })
  t.equal(byUserCode.status, 200, 'validate by userCode succeeds')
  t.equal(byUserCode.body.device.id, second.deviceId)
  t.equal(byUserCode.body.device.icon, 'frame', 'default icon')
  t.equal(byUserCode.body.device.color, '#000000', 'default colour')
  t.equal(byUserCode.body.device.description, '', 'description may be empty')
  const secondCreds = (await poll(second.deviceId, second.deviceCode)).body.credentials
  t.equal(secondCreds?.username, second.deviceId, 'the second device gets its own credentials')
  t.not(secondCreds?.password, creds.password, 'a different secret')

  // 6. List, get, patch.
  const list = await api('/api/device', { token: alice.token })
  t.equal(list.status, 200)
  t.same(list.body.devices.map((x: Json) => x.id).sort(), [codes.deviceId, second.deviceId].sort(), "the list holds alice's two devices")
  for (const x of list.body.devices) {
    t.same(Object.keys(x).sort(), [...detailFields].sort(), 'listed devices have the detail fields')
    deviceTypes(t, x, 'listed device')
  }
  const got = await api(`/api/device/${codes.deviceId}`, { token: alice.token })
  t.equal(got.status, 200)
  t.same(got.body, { ...d, isActive: got.body.isActive }, 'get shows the claimed device')

  const patched = await api(`/api/device/${codes.deviceId}`, {
    method: 'PATCH',
    token: alice.token,
    body: { name: 'Living room', color: '#00FF7F', icon: 'sofa', description: '', selectedModel: 'flux-schnell' },
  })
  t.equal(patched.status, 200, 'patch succeeds')
  t.equal(patched.body.name, 'Living room')
  t.equal(patched.body.color, '#00ff7f')
  t.equal(patched.body.icon, 'sofa')
  t.equal(patched.body.description, '')
  t.equal(patched.body.selectedModel, 'flux-schnell')
  const afterPatch = await api(`/api/device/${codes.deviceId}`, { token: alice.token })
  t.equal(afterPatch.body.name, 'Living room', 'the change is visible afterwards')
  t.equal(afterPatch.body.selectedModel, 'flux-schnell')
  t.equal(afterPatch.body.userId, alice.id, 'patch does not change the owner')
  t.equal((await poll(codes.deviceId, codes.deviceCode)).body.name, 'Living room', 'the device sees its new name when it polls')

  // 7. Disconnect: the secret is revoked and the record says so.
  const disc = await api('/api/device/disconnect', { token: alice.token, body: { deviceId: codes.deviceId } })
  t.equal(disc.status, 200, 'disconnect succeeds')
  t.equal(disc.body.success, true)
  t.type(disc.body.message, 'string')
  t.equal(disc.body.kicked, false, 'no broker session to end yet')
  t.same(Object.keys(disc.body.device).sort(), [...deviceFields].sort())
  t.equal(disc.body.device.isActive, false)
  const [revoked] = await db.select().from(device).where(eq(device.id, codes.deviceId))
  t.equal(revoked?.secretHash, null, 'the secret hash is gone')
  const afterDisc = await poll(codes.deviceId, codes.deviceCode)
  t.equal(afterDisc.status, 200)
  t.equal(afterDisc.body.status, 'disconnected', 'the device sees it was disconnected')
  t.notOk('credentials' in afterDisc.body, 'and gets no new credentials')
  const stillListed = await api(`/api/device/${codes.deviceId}`, { token: alice.token })
  t.equal(stillListed.status, 200, 'a disconnected device still exists')
  t.equal(stillListed.body.isActive, false)

  // 8. The device can pair again: a new init, a new claim, new credentials.
  const repaired = await initDevice()
  t.not(repaired.deviceId, codes.deviceId)
  const reclaim = await validate(alice.token, { pinCode: repaired.pinCode, name: 'Living room again' })
  t.equal(reclaim.status, 200, 'pairing again works')
  const reissued = await poll(repaired.deviceId, repaired.deviceCode)
  t.equal(reissued.body.status, 'active')
  t.equal(reissued.body.credentials?.username, repaired.deviceId, 'the re-paired device gets credentials')
  t.match(reissued.body.credentials?.password, base64url43)

  // 9. Events of the first device, newest first, walked one page at a time.
  const all = await api(`/api/device/${codes.deviceId}/events?limit=100`, { token: alice.token })
  t.equal(all.status, 200)
  t.equal(all.body.nextCursor, null, 'everything on one page')
  t.same(
    all.body.events.map((e: Json) => e.type),
    ['device.credentials_revoked', 'device.credentials_issued', 'device.paired'],
    'the events newest first',
  )
  for (const e of all.body.events) {
    t.same(Object.keys(e).sort(), ['created_at', 'data', 'deviceId', 'id', 'organization_id', 'type', 'userId'])
    t.equal(e.deviceId, codes.deviceId)
    t.equal(e.userId, alice.id)
    t.match(e.created_at, iso)
  }
  const times = all.body.events.map((e: Json) => Date.parse(e.created_at))
  t.ok(
    times.every((x: number, i: number) => i === 0 || x <= times[i - 1]),
    'created_at never increases down the list',
  )
  t.equal(all.body.events[2].id, claimed.body.eventId, 'the paired event is the eventId of the record')
  t.equal(all.body.events[2].data.via, 'pinCode')

  const walked: string[] = []
  let cursor: string | null = null
  for (let pageNo = 0; pageNo < 10; pageNo++) {
    const res: Res = await api(`/api/device/${codes.deviceId}/events?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
      token: alice.token,
    })
    t.equal(res.status, 200, `page ${pageNo + 1}`)
    t.equal(res.body.events.length, 1, 'one event per page')
    walked.push(res.body.events[0].id)
    cursor = res.body.nextCursor
    if (cursor === null) break
    t.type(cursor, 'string')
  }
  t.same(
    walked,
    all.body.events.map((e: Json) => e.id),
    'limit=1 walks every event once, in order',
  )
  const badCursor = await api(`/api/device/${codes.deviceId}/events?cursor=not-a-cursor`, { token: alice.token })
  t.equal(badCursor.status, 400, 'an invalid cursor is refused')
  t.equal(badCursor.body.code, 'INVALID_CURSOR')
  t.type(badCursor.body.message, 'string')

  // 10. Delete with a Better Auth JWT.
  const tokenRes = await api('/api/auth/token', { token: alice.token })
  t.equal(tokenRes.status, 200, 'GET /api/auth/token issues a JWT')
  const jwt = tokenRes.body.token as string
  t.match(jwt, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT')
  const del = await api('/api/device/delete', { method: 'DELETE', token: jwt, body: { deviceId: codes.deviceId } })
  t.equal(del.status, 200, 'delete with a JWT succeeds')
  t.same(Object.keys(del.body).sort(), ['device', 'message', 'success'])
  t.equal(del.body.success, true)
  t.type(del.body.message, 'string')
  t.same(Object.keys(del.body.device), deviceFields, 'the deleted device has exactly the Device fields')
  deviceTypes(t, del.body.device, 'deleted device')
  t.equal(del.body.device.id, codes.deviceId)
  t.equal(del.body.device.name, 'Living room', 'the device as it was when deleted')
  t.equal(del.body.device.userId, alice.id)
  t.equal(del.body.device.pinCode, codes.pinCode)
  t.equal(del.body.device.color, '#00ff7f')
  t.equal(del.body.device.selectedModel, 'flux-schnell')
  t.equal(del.body.device.created_at, d.created_at)
  t.equal(del.body.device.isActive, false)

  errorBody(t, await api(`/api/device/${codes.deviceId}`, { token: alice.token }), 404, 'DEVICE_NOT_FOUND', 'get after delete')
  errorBody(t, await api(`/api/device/${codes.deviceId}/events`, { token: alice.token }), 404, 'DEVICE_NOT_FOUND', 'events after delete')
  t.same(await db.select().from(event).where(eq(event.deviceId, codes.deviceId)), [], 'its events are gone')
  t.same(await db.select().from(deviceInit).where(eq(deviceInit.id, codes.deviceId)), [], 'its initialisation record is gone')
  errorBody(t, await poll(codes.deviceId, codes.deviceCode), 404, 'DEVICE_NOT_FOUND', 'the deleted device polling')
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: jwt, body: { deviceId: codes.deviceId } }),
    404,
    'DEVICE_NOT_FOUND',
    'deleting twice',
  )
  const listAfter = await api('/api/device', { token: alice.token })
  t.same(listAfter.body.devices.map((x: Json) => x.id).sort(), [second.deviceId, repaired.deviceId].sort(), 'the list no longer holds it')

  // 11. Delete with the session token works too; no token or a bad JWT does not.
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', body: { deviceId: second.deviceId } }),
    401,
    'UNAUTHORIZED',
    'delete without a token',
  )
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: 'aaaa.bbbb.cccc', body: { deviceId: second.deviceId } }),
    401,
    'UNAUTHORIZED',
    'delete with a garbage JWT',
  )
  const [h, p, s] = jwt.split('.') as [string, string, string]
  const forged = `${h}.${p}.${s.slice(0, -4)}${s.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: forged, body: { deviceId: second.deviceId } }),
    401,
    'UNAUTHORIZED',
    'delete with a JWT whose signature is wrong',
  )
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: 'not-a-session', body: { deviceId: second.deviceId } }),
    401,
    'UNAUTHORIZED',
    'delete with a garbage session token',
  )
  t.equal((await api(`/api/device/${second.deviceId}`, { token: alice.token })).status, 200, 'refused deletes leave the device')
  const delSession = await api('/api/device/delete', { method: 'DELETE', token: alice.token, body: { deviceId: second.deviceId } })
  t.equal(delSession.status, 200, 'delete with the session token succeeds')
  t.equal(delSession.body.device.id, second.deviceId)
  t.equal(delSession.body.device.name, 'Hall frame')
  t.equal((await api(`/api/device/${second.deviceId}`, { token: alice.token })).status, 404, 'and it is gone')
})

t.test('validate: field names and types of the approved record as the interface', async (t) => {
  const bob = await person('bob')
  const codes = await initDevice()
  const claimed = await validate(bob.token, { userCode: codes.userCode, name: 'Bob frame', color: '#123abc' })
  t.equal(claimed.status, 200)
  const rec = (await poll(codes.deviceId, codes.deviceCode)).body
  initRecordKeys(t, rec, 'approved record')
  deviceTypes(t, rec, 'approved record')
  for (const k of ['organization_id']) t.equal(rec[k], null, `${k} is null for a personal device`)
  for (const k of ['eventId', 'deviceCode', 'userCode', 'status', 'expires_at']) t.type(rec[k], 'string', `${k} is a string`)
  t.match(rec.userCode, uuid)
  t.match(rec.deviceCode, uuid)
  t.match(rec.expires_at, iso)
  t.equal(rec.interval, 0)
})

t.test('expired: a pending record past expires_at is refused with 410 and reads as expired', async (t) => {
  const carol = await person('carol')
  const codes = await initDevice()
  const db = svc.app.database.db
  await db
    .update(deviceInit)
    .set({ expiresAt: new Date(Date.now() - 1000) })
    .where(eq(deviceInit.id, codes.deviceId))
  const [stillPending] = await db.select().from(deviceInit).where(eq(deviceInit.id, codes.deviceId))
  t.equal(stillPending?.status, 'pending', 'nothing has swept it yet')

  errorBody(t, await validate(carol.token, { pinCode: typed(codes.pinCode) }), 410, 'CODE_EXPIRED', 'validate an expired pinCode')
  errorBody(t, await validate(carol.token, { userCode: codes.userCode }), 410, 'CODE_EXPIRED', 'validate an expired userCode')
  errorBody(
    t,
    await api('/api/device/deny', { token: carol.token, body: { userCode: codes.userCode } }),
    410,
    'CODE_EXPIRED',
    'deny an expired code',
  )
  const polled = await poll(codes.deviceId, codes.deviceCode)
  t.equal(polled.status, 200)
  t.equal(polled.body.status, 'expired', 'the device sees expired')
  t.notOk('credentials' in polled.body)
  const [row] = await db.select().from(deviceInit).where(eq(deviceInit.id, codes.deviceId))
  t.equal(row?.status, 'expired', 'the read stored the expiry')
  t.same(await db.select().from(device).where(eq(device.id, codes.deviceId)), [], 'no device was created')
})

t.test('denied: the user refuses a code; the device sees denied; the code cannot be used afterwards', async (t) => {
  const dave = await person('dave')
  const codes = await initDevice()
  const denied = await api('/api/device/deny', { token: dave.token, body: { pinCode: typed(codes.pinCode) } })
  t.equal(denied.status, 200, 'deny succeeds')
  t.same(denied.body, { success: true, status: 'denied', deviceId: codes.deviceId })
  const polled = await poll(codes.deviceId, codes.deviceCode)
  t.equal(polled.body.status, 'denied', 'the device sees denied')
  t.notOk('credentials' in polled.body)
  errorBody(t, await validate(dave.token, { userCode: codes.userCode }), 409, 'CODE_ALREADY_USED', 'validate after deny')
  errorBody(t, await validate(dave.token, { pinCode: codes.pinCode }), 409, 'CODE_ALREADY_USED', 'validate the denied pinCode')
  errorBody(
    t,
    await api('/api/device/deny', { token: dave.token, body: { userCode: codes.userCode } }),
    409,
    'CODE_ALREADY_USED',
    'deny twice',
  )
  t.same(await svc.app.database.db.select().from(device).where(eq(device.id, codes.deviceId)), [], 'no device was created')
  errorBody(t, await api('/api/device/deny', { body: { userCode: codes.userCode } }), 401, 'UNAUTHORIZED', 'deny without a session')
  errorBody(
    t,
    await api('/api/device/validate', { body: { userCode: codes.userCode, name: 'x' } }),
    401,
    'UNAUTHORIZED',
    'validate without a session',
  )
})

t.test('reused: a claimed code is refused with 409, for the claimer and for anyone else', async (t) => {
  const erin = await person('erin')
  const frank = await person('frank')
  const codes = await initDevice()
  t.equal((await validate(erin.token, { userCode: codes.userCode, name: 'Erin frame' })).status, 200)
  errorBody(t, await validate(erin.token, { userCode: codes.userCode, name: 'Again' }), 409, 'CODE_ALREADY_USED', 'the same user again')
  errorBody(t, await validate(frank.token, { userCode: codes.userCode, name: 'Mine now' }), 409, 'CODE_ALREADY_USED', 'a second user')
  errorBody(
    t,
    await validate(frank.token, { pinCode: typed(codes.pinCode), name: 'Mine now' }),
    409,
    'CODE_ALREADY_USED',
    'a second user by pinCode',
  )
  await poll(codes.deviceId, codes.deviceCode)
  errorBody(
    t,
    await validate(frank.token, { userCode: codes.userCode, name: 'Mine now' }),
    409,
    'CODE_ALREADY_USED',
    'after the credentials were issued',
  )
  errorBody(
    t,
    await api('/api/device/deny', { token: frank.token, body: { userCode: codes.userCode } }),
    409,
    'CODE_ALREADY_USED',
    'deny a claimed code',
  )
  const rec = await poll(codes.deviceId, codes.deviceCode)
  t.equal(rec.body.userId, erin.id, 'the device still belongs to the first claimer')
  t.equal(rec.body.name, 'Erin frame')
  t.equal(rec.body.status, 'active')
})

t.test('get-init-device: wrong deviceCode and unknown deviceId are the same 404', async (t) => {
  const codes = await initDevice()
  const wrongCode = await poll(codes.deviceId, randomUUID())
  errorBody(t, wrongCode, 404, 'DEVICE_NOT_FOUND', 'wrong deviceCode')
  const unknown = await poll(randomUUID(), codes.deviceCode)
  errorBody(t, unknown, 404, 'DEVICE_NOT_FOUND', 'unknown deviceId')
  t.equal(wrongCode.body.message, unknown.body.message, 'the answer does not tell which part was wrong')
  errorBody(t, await poll(codes.deviceId, codes.userCode), 404, 'DEVICE_NOT_FOUND', 'the userCode is not the deviceCode')
  t.equal((await poll(codes.deviceId, codes.deviceCode)).body.status, 'pending', 'the right code still works')
})

t.test('concurrency: two users validating the same code at once, exactly one wins', async (t) => {
  for (const by of ['pinCode', 'userCode'] as const) {
    for (let round = 0; round < 3; round++) {
      const [u1, u2] = await Promise.all([person('racer'), person('racer')])
      const codes = await initDevice()
      const code = by === 'pinCode' ? { pinCode: typed(codes.pinCode) } : { userCode: codes.userCode }
      const results = await Promise.all([validate(u1.token, { ...code, name: 'One' }), validate(u2.token, { ...code, name: 'Two' })])
      t.same(results.map((r) => r.status).sort(), [200, 409], `by ${by}, round ${round + 1}: one 200 and one 409`)
      const winnerIdx = results.findIndex((r) => r.status === 200)
      const winner = winnerIdx === 0 ? u1 : u2
      const loser = winnerIdx === 0 ? u2 : u1
      const lost = results[1 - winnerIdx]!
      t.equal(lost.body.code, 'CODE_ALREADY_USED')
      const rec = await poll(codes.deviceId, codes.deviceCode)
      t.equal(rec.body.userId, winner.id, 'the device belongs to the winner')
      t.equal(rec.body.name, winnerIdx === 0 ? 'One' : 'Two')
      t.ok(rec.body.credentials, 'the device gets one set of credentials')
      t.equal((await api(`/api/device/${codes.deviceId}`, { token: winner.token })).status, 200)
      t.equal((await api(`/api/device/${codes.deviceId}`, { token: loser.token })).status, 404, 'the loser cannot see it')
      const paired = await svc.app.database.db.select().from(event).where(eq(event.deviceId, codes.deviceId))
      t.equal(paired.filter((e) => e.type === 'device.paired').length, 1, 'one device.paired event')
    }
  }
})

t.test('with the default poll interval: polling too fast is 429 SLOW_DOWN; the sweeper expires stale records', async (t) => {
  const slow = await startApp(t, { env: { DEVICE_SWEEP_INTERVAL: '1', DEVICE_CODE_TTL: '30' } })
  const db = slow.app.database.db

  const codes = await initDevice(slow.url)
  t.equal(codes.interval, 5, 'the default interval is 5 seconds')
  t.ok(Date.parse(codes.expires_at) - Date.now() <= 30_000, 'DEVICE_CODE_TTL=30 shortens the lifetime')
  const first = await poll(codes.deviceId, codes.deviceCode, slow.url)
  t.equal(first.status, 200, 'the first poll is answered')
  t.equal(first.body.status, 'pending')
  t.equal(first.body.interval, 5)
  const fast = await poll(codes.deviceId, codes.deviceCode, slow.url)
  errorBody(t, fast, 429, 'SLOW_DOWN', 'a poll right after the first')
  t.equal(fast.headers.get('retry-after'), '5', 'Retry-After says how long to wait')
  errorBody(t, await poll(codes.deviceId, codes.deviceCode, slow.url), 429, 'SLOW_DOWN', 'still too fast')
  errorBody(t, await poll(codes.deviceId, randomUUID(), slow.url), 404, 'DEVICE_NOT_FOUND', 'a wrong code is still 404, not SLOW_DOWN')
  // As if the interval had passed since the last answered poll.
  await db
    .update(deviceInit)
    .set({ lastPolledAt: new Date(Date.now() - 6000) })
    .where(eq(deviceInit.id, codes.deviceId))
  const later = await poll(codes.deviceId, codes.deviceCode, slow.url)
  t.equal(later.status, 200, 'after the interval the device is answered again')
  t.equal(later.body.status, 'pending')

  // The sweeper: a stale pending record becomes expired in the table without anyone reading it.
  const stale = await initDevice(slow.url)
  const fresh = await initDevice(slow.url)
  await db
    .update(deviceInit)
    .set({ expiresAt: new Date(Date.now() - 1000) })
    .where(eq(deviceInit.id, stale.deviceId))
  const statusOf = async (id: string) =>
    (await db.select({ status: deviceInit.status }).from(deviceInit).where(eq(deviceInit.id, id)))[0]?.status
  const deadline = Date.now() + 15_000
  while ((await statusOf(stale.deviceId)) !== 'expired' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
  t.equal(await statusOf(stale.deviceId), 'expired', 'the sweeper marked the stale record expired')
  t.equal(await statusOf(fresh.deviceId), 'pending', 'a record still in its lifetime stays pending')
  const user = await (async () => {
    const { client } = makeClient(slow.url)
    return signUp(client, uniqueEmail('late'))
  })()
  const late = await call(slow.url, '/api/device/validate', { token: user.token, body: { userCode: stale.userCode, name: 'Too late' } })
  errorBody(t, late, 410, 'CODE_EXPIRED', 'claiming a swept record')
  const latePin = await call(slow.url, '/api/device/validate', { token: user.token, body: { pinCode: stale.pinCode, name: 'Too late' } })
  errorBody(t, latePin, 410, 'CODE_EXPIRED', 'claiming a swept record by its pinCode')
})
