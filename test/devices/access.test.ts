// Who may see and change a device: its owner; members of its organization read it, owners and
// admins of the organization manage it; nobody else even learns it exists. Also the brute-force
// limit on pairing codes (per user, not per code). One app for the file.
import { eq } from 'drizzle-orm'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { jsonCall, type CallOptions, type Json, type Res } from '../helpers/http.js'
import { makeClient, signUp, uniqueEmail, type Client } from '../helpers/client.js'
import { waitForMail } from '../helpers/outbox.js'
import { PIN_ALPHABET } from '../../src/devices/codes.js'
import { device } from '../../src/devices/tables.js'
import { appFetch } from '../helpers/app-fetch.js'

type Tap = Pick<typeof t, 'equal' | 'type' | 'ok' | 'match' | 'same' | 'not'>
type Person = { client: Client; token: string; id: string; email: string }

const display = { width: 800, height: 480, palette: 'bw' }
const suffix = Math.random().toString(36).slice(2, 8)

let svc: TestApp

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
})

const api = (path: string, opts: CallOptions = {}) => jsonCall(svc.url, path, opts)

async function person(prefix: string): Promise<Person> {
  const email = uniqueEmail(prefix)
  const { client } = makeClient(svc.url)
  const { token, userId } = await signUp(client, email, 'correct-horse-battery', `${prefix} person`)
  return { client, token, id: userId, email }
}

async function jwtOf(p: Person): Promise<string> {
  const res = await api('/api/auth/token', { token: p.token })
  if (res.status !== 200) throw new Error(`token failed: ${res.status}`)
  return res.body.token as string
}

async function initDevice() {
  const res = await api('/api/device/init', { body: { display } })
  if (res.status !== 200) throw new Error(`init failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { deviceId: string; deviceCode: string; userCode: string; pinCode: string }
}

const validate = (p: Person, body: Record<string, unknown>) =>
  api('/api/device/validate', { token: p.token, body: { name: 'A frame', ...body } })
const poll = (deviceId: string, deviceCode: string) => api('/api/device/get-init-device', { body: { deviceId, deviceCode } })

/** Pairs a new device for `p` and collects its credentials; returns its id and codes. */
async function pairFor(p: Person, extra: Record<string, unknown> = {}) {
  const codes = await initDevice()
  const res = await validate(p, { pinCode: codes.pinCode, ...extra })
  if (res.status !== 200) throw new Error(`validate failed: ${res.status} ${JSON.stringify(res.body)}`)
  const polled = await poll(codes.deviceId, codes.deviceCode)
  if (!polled.body.credentials) throw new Error('no credentials')
  return { ...codes, claim: res.body }
}

function errorBody(t: Tap, res: Res, status: number, code: string, what: string) {
  t.equal(res.status, status, `${what}: status ${status}`)
  t.type(res.body?.message, 'string', `${what}: has a message`)
  t.equal(res.body?.code, code, `${what}: code ${code}`)
}

/** A pin from the right alphabet that is not `avoid`. */
function otherPin(avoid: string, n: number): string {
  let s = ''
  for (let i = 0; i < 8; i++) s += PIN_ALPHABET[(i * 7 + n * 3 + 1) % PIN_ALPHABET.length]
  const pin = `${s.slice(0, 4)}-${s.slice(4)}`
  return pin === avoid ? otherPin(avoid, n + 1) : pin
}

const secretHashOf = async (id: string) =>
  (await svc.app.database.db.select({ h: device.secretHash }).from(device).where(eq(device.id, id)))[0]?.h

t.test("a second user can neither claim, see, change, disconnect nor delete someone else's device", async (t) => {
  const [alice, bob] = await Promise.all([person('alice'), person('bob')])
  const codes = await initDevice()
  t.equal(
    (await validate(alice, { userCode: codes.userCode, name: 'Alice frame', color: '#112233' })).status,
    200,
    'alice claims the device',
  )
  errorBody(
    t,
    await validate(bob, { pinCode: codes.pinCode, name: 'Bob now' }),
    409,
    'CODE_ALREADY_USED',
    'bob claiming the same pin afterwards',
  )
  errorBody(
    t,
    await validate(bob, { userCode: codes.userCode, name: 'Bob now' }),
    409,
    'CODE_ALREADY_USED',
    'bob claiming the same userCode afterwards',
  )
  const creds = (await poll(codes.deviceId, codes.deviceCode)).body.credentials
  t.ok(creds, 'the device got its credentials')
  const id = codes.deviceId
  const bobJwt = await jwtOf(bob)

  errorBody(t, await api(`/api/device/${id}`, { token: bob.token }), 404, 'DEVICE_NOT_FOUND', 'bob gets it')
  errorBody(t, await api(`/api/device/${id}/events`, { token: bob.token }), 404, 'DEVICE_NOT_FOUND', 'bob reads its events')
  errorBody(
    t,
    await api(`/api/device/${id}`, { method: 'PATCH', token: bob.token, body: { name: 'Hijacked' } }),
    404,
    'DEVICE_NOT_FOUND',
    'bob patches it',
  )
  errorBody(
    t,
    await api('/api/device/disconnect', { token: bob.token, body: { deviceId: id } }),
    404,
    'DEVICE_NOT_FOUND',
    'bob disconnects it',
  )
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: bob.token, body: { deviceId: id } }),
    404,
    'DEVICE_NOT_FOUND',
    'bob deletes it with his session',
  )
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: bobJwt, body: { deviceId: id } }),
    404,
    'DEVICE_NOT_FOUND',
    'bob deletes it with his JWT',
  )
  const missing = await api(`/api/device/${crypto.randomUUID()}`, { token: bob.token })
  const hidden = await api(`/api/device/${id}`, { token: bob.token })
  t.same(hidden.body, missing.body, "someone else's device looks exactly like one that does not exist")
  const bobList = await api('/api/device', { token: bob.token })
  t.equal(bobList.status, 200)
  t.same(bobList.body.devices, [], "bob's list is empty")

  const still = await api(`/api/device/${id}`, { token: alice.token })
  t.equal(still.status, 200, 'the device is still there for alice')
  t.equal(still.body.name, 'Alice frame', 'unchanged')
  t.equal(still.body.userId, alice.id)
  t.ok(await secretHashOf(id), 'its secret was not revoked')
  t.equal((await poll(codes.deviceId, codes.deviceCode)).body.status, 'active', 'the device is still active')
  t.equal((await api('/api/device', { token: alice.token })).body.devices.length, 1)

  errorBody(t, await api(`/api/device/${id}`), 401, 'UNAUTHORIZED', 'get without a session')
  errorBody(t, await api('/api/device'), 401, 'UNAUTHORIZED', 'list without a session')
  errorBody(t, await api(`/api/device/${id}/events`), 401, 'UNAUTHORIZED', 'events without a session')
  errorBody(t, await api(`/api/device/${id}`, { method: 'PATCH', body: { name: 'x' } }), 401, 'UNAUTHORIZED', 'patch without a session')
  errorBody(t, await api('/api/device/disconnect', { body: { deviceId: id } }), 401, 'UNAUTHORIZED', 'disconnect without a session')
  errorBody(t, await api('/api/device/delete', { method: 'DELETE', body: { deviceId: id } }), 401, 'UNAUTHORIZED', 'delete without a token')
  errorBody(
    t,
    await api('/api/device/delete', {
      method: 'DELETE',
      token: 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl',
      body: { deviceId: id },
    }),
    401,
    'UNAUTHORIZED',
    'delete with a garbage JWT',
  )

  // The owner's JWT does what bob's could not.
  const aliceJwt = await jwtOf(alice)
  const del = await api('/api/device/delete', { method: 'DELETE', token: aliceJwt, body: { deviceId: id } })
  t.equal(del.status, 200, "alice's own JWT deletes it")
  t.equal(del.body.device.userId, alice.id)
  errorBody(t, await api(`/api/device/${id}`, { token: alice.token }), 404, 'DEVICE_NOT_FOUND', 'gone afterwards')
})

t.test('brute force on pinCode: 429 after 5 wrong codes for one user; another user is not blocked', async (t) => {
  const [mallory, honest] = await Promise.all([person('mallory'), person('honest')])
  const codes = await initDevice()
  for (let i = 0; i < 4; i++) {
    const guess = otherPin(codes.pinCode, i)
    const res = await validate(mallory, { pinCode: i % 2 ? guess.replace('-', '').toLowerCase() : guess })
    errorBody(t, res, 404, 'INVALID_CODE', `wrong pin ${i + 1}`)
  }
  errorBody(t, await validate(mallory, { userCode: crypto.randomUUID() }), 404, 'INVALID_CODE', 'wrong userCode (the fifth failure)')
  const blocked = await validate(mallory, { pinCode: otherPin(codes.pinCode, 9) })
  errorBody(t, blocked, 429, 'TOO_MANY_ATTEMPTS', 'the sixth attempt')
  t.ok(Number(blocked.headers.get('retry-after')) > 0, 'Retry-After is set')
  errorBody(t, await validate(mallory, { pinCode: codes.pinCode }), 429, 'TOO_MANY_ATTEMPTS', 'even the right code, once blocked')
  errorBody(
    t,
    await api('/api/device/deny', { token: mallory.token, body: { pinCode: codes.pinCode } }),
    429,
    'TOO_MANY_ATTEMPTS',
    'deny, once blocked',
  )
  t.equal((await poll(codes.deviceId, codes.deviceCode)).body.status, 'pending', 'the record is untouched')

  const ok = await validate(honest, { pinCode: codes.pinCode, name: 'Honest frame' })
  t.equal(ok.status, 200, 'another user claims it with the right code')
  t.equal(ok.body.device.userId, honest.id)
  t.equal((await poll(codes.deviceId, codes.deviceCode)).body.userId, honest.id)
})

t.test('organizations: owner, admin, member and outsider', async (t) => {
  const [olive, adam, mia, nora] = await Promise.all([person('olive'), person('adam'), person('mia'), person('nora')])

  // The owner creates an organization over plain HTTP with her bearer token.
  const created = await api('/api/auth/organization/create', {
    token: olive.token,
    body: { name: 'Acme Frames', slug: `acme-frames-${suffix}` },
  })
  t.equal(created.status, 200, 'organization created')
  const orgId = created.body.id as string
  t.type(orgId, 'string')

  // adam joins as admin, mia as member, through invitation mail and accept.
  for (const [p, role] of [
    [adam, 'admin'],
    [mia, 'member'],
  ] as const) {
    const inv = await olive.client.organization.inviteMember({ email: p.email, role, organizationId: orgId })
    t.equal(inv.error, null, `invite ${role}`)
    const verifyMail = await waitForMail(svc.dataDir, p.email, 'verify-email')
    await appFetch(verifyMail.link!, { redirect: 'manual' })
    const mail = await waitForMail(svc.dataDir, p.email, 'invitation')
    const invitationId = new URL(mail.link!).pathname.split('/').pop()!
    const accepted = await p.client.organization.acceptInvitation({ invitationId })
    t.equal(accepted.error, null, `${role} accepts`)
    t.equal(accepted.data?.member.role, role)
  }

  // The owner claims a device into the organization.
  const orgDevice = await pairFor(olive, { organizationId: orgId, name: 'Lobby' })
  t.equal(orgDevice.claim.organization_id, orgId, 'the claim answer names the organization')
  t.equal(orgDevice.claim.device.organization_id, orgId)
  t.equal(orgDevice.claim.device.userId, olive.id)
  const rec = await poll(orgDevice.deviceId, orgDevice.deviceCode)
  t.equal(rec.body.organization_id, orgId, 'the initialisation record carries organization_id')
  const personal = await pairFor(olive, { name: 'Olive at home' })
  const id = orgDevice.deviceId

  // A plain member reads but does not manage.
  const miaGet = await api(`/api/device/${id}`, { token: mia.token })
  t.equal(miaGet.status, 200, 'a member gets the organization device')
  t.equal(miaGet.body.name, 'Lobby')
  t.equal((await api(`/api/device/${id}/events`, { token: mia.token })).status, 200, 'a member reads its events')
  const miaList = await api('/api/device', { token: mia.token })
  t.same(
    miaList.body.devices.map((d: Json) => d.id),
    [id],
    "a member's list holds the organization's device, not the owner's personal one",
  )
  errorBody(
    t,
    await api(`/api/device/${personal.deviceId}`, { token: mia.token }),
    404,
    'DEVICE_NOT_FOUND',
    "a member gets the owner's personal device",
  )
  errorBody(
    t,
    await api(`/api/device/${id}`, { method: 'PATCH', token: mia.token, body: { name: 'Mine' } }),
    403,
    'FORBIDDEN',
    'a member patches',
  )
  errorBody(t, await api('/api/device/disconnect', { token: mia.token, body: { deviceId: id } }), 403, 'FORBIDDEN', 'a member disconnects')
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: mia.token, body: { deviceId: id } }),
    403,
    'FORBIDDEN',
    'a member deletes with her session',
  )
  errorBody(
    t,
    await api('/api/device/delete', { method: 'DELETE', token: await jwtOf(mia), body: { deviceId: id } }),
    403,
    'FORBIDDEN',
    'a member deletes with her JWT',
  )
  const afterMia = await api(`/api/device/${id}`, { token: olive.token })
  t.equal(afterMia.body.name, 'Lobby', 'nothing changed')
  t.ok(await secretHashOf(id), 'the secret is still there')

  // A member may not add devices to the organization; an outsider neither.
  const pendingForOrg = await initDevice()
  errorBody(
    t,
    await validate(mia, { pinCode: pendingForOrg.pinCode, organizationId: orgId }),
    403,
    'FORBIDDEN',
    'a member claiming into the organization',
  )
  errorBody(
    t,
    await validate(nora, { pinCode: pendingForOrg.pinCode, organizationId: orgId }),
    403,
    'FORBIDDEN',
    'a non-member claiming into the organization',
  )
  t.equal(
    (await poll(pendingForOrg.deviceId, pendingForOrg.deviceCode)).body.status,
    'pending',
    'the refused claims left the record pending',
  )

  // An admin manages: claims into the organization, patches, disconnects.
  const adamClaim = await validate(adam, { pinCode: pendingForOrg.pinCode, organizationId: orgId, name: 'Reception' })
  t.equal(adamClaim.status, 200, 'an admin claims into the organization')
  t.equal(adamClaim.body.device.organization_id, orgId)
  const adamPatch = await api(`/api/device/${id}`, { method: 'PATCH', token: adam.token, body: { name: 'Main lobby', color: '#ABCDEF' } })
  t.equal(adamPatch.status, 200, 'an admin patches the organization device')
  t.equal(adamPatch.body.name, 'Main lobby')
  const seenByOwner = await api(`/api/device/${id}`, { token: olive.token })
  t.equal(seenByOwner.body.name, 'Main lobby', 'the owner sees the change')
  t.equal(seenByOwner.body.color, '#abcdef')
  t.equal(seenByOwner.body.userId, olive.id, 'the owner stays the owner')
  errorBody(
    t,
    await api(`/api/device/${personal.deviceId}`, { method: 'PATCH', token: adam.token, body: { name: 'x' } }),
    404,
    'DEVICE_NOT_FOUND',
    "an admin patches the owner's personal device",
  )

  // The organization owner manages a device another member added.
  const byOwner = await api(`/api/device/${adamClaim.body.device.id}`, {
    method: 'PATCH',
    token: olive.token,
    body: { description: 'At the desk' },
  })
  t.equal(byOwner.status, 200, "the organization owner patches the admin's organization device")
  t.equal(byOwner.body.userId, adam.id)
  t.equal(
    (await api(`/api/device/${adamClaim.body.device.id}`, { token: mia.token })).status,
    200,
    'the member sees the admin-added device',
  )

  // An outsider sees nothing.
  errorBody(t, await api(`/api/device/${id}`, { token: nora.token }), 404, 'DEVICE_NOT_FOUND', 'an outsider gets it')
  errorBody(
    t,
    await api(`/api/device/${id}`, { method: 'PATCH', token: nora.token, body: { name: 'x' } }),
    404,
    'DEVICE_NOT_FOUND',
    'an outsider patches it',
  )
  t.same((await api('/api/device', { token: nora.token })).body.devices, [], "an outsider's list is empty")

  // Admin disconnects and deletes.
  const disc = await api('/api/device/disconnect', { token: adam.token, body: { deviceId: id } })
  t.equal(disc.status, 200, 'an admin disconnects')
  t.equal(await secretHashOf(id), null, 'the secret is revoked')
  t.equal((await poll(orgDevice.deviceId, orgDevice.deviceCode)).body.status, 'disconnected')
  const del = await api('/api/device/delete', { method: 'DELETE', token: await jwtOf(adam), body: { deviceId: id } })
  t.equal(del.status, 200, 'an admin deletes with a JWT')
  t.equal(del.body.device.id, id)
  t.equal(del.body.device.userId, olive.id)
  errorBody(t, await api(`/api/device/${id}`, { token: olive.token }), 404, 'DEVICE_NOT_FOUND', 'gone for the owner too')
})
