// Web push end to end: the app sends to a local HTTPS push service (helpers/push-service.ts)
// that checks each request's VAPID JWT and decrypts the aes128gcm payload with the
// subscription's private key; the tests read the plaintext a browser would show.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eq } from 'drizzle-orm'
import { topicFor } from '../../src/mqtt/contract.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { waitForMail } from '../helpers/outbox.js'
import { startPushService, type PushService, type TestSubscription } from '../helpers/push-service.js'
import webpush from 'web-push'
import { serviceSetting } from '../../src/settings/tables.js'
import { generateVapidKeys } from '../../src/notifications/vapid.js'
import { appFetch } from '../helpers/app-fetch.js'

type Person = { token: string; id: string; email: string }
type Report = {
  userId: string
  sent: number
  failed: number
  removed: number
  results: Array<{
    subscriptionId: string
    status: string
    statusCode: number | null
    attempts: number
    error?: string
    endpointOrigin: string
  }>
}
type Message = { kind: string; title: string; body: string; url: string | null; sentAt: string }

const ADMIN = `push-admin-${Date.now().toString(36)}@example.com`
let svc: TestApp
let push: PushService
let vapidKey: string
let alice: Person
let bob: Person
let admin: Person

t.before(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dps-push-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  push = await startPushService(t, dir)
  svc = await startApp(t, {
    env: {
      PUSH_CA_FILE: push.caFile,
      PUSH_ENDPOINT_HOSTS: '127.0.0.1',
      PUSH_MAX_RETRY_WAIT: '5',
      ADMIN_EMAILS: ADMIN,
      VAPID_SUBJECT: 'mailto:ops@example.com',
      DEVICE_POLL_INTERVAL: '0',
      // Short, so a change right after a notification arrives within the tests' waits; long enough
      // that eight devices connecting at once on a loaded machine (their presence written one
      // batch at a time) all fall within one window.
      PUSH_PRESENCE_WINDOW: '3',
    },
  })
  alice = await person('alice')
  bob = await person('bob')
  admin = await person('admin', ADMIN)
  // ADMIN_EMAILS takes effect once the address is verified.
  const mail = await waitForMail(svc.dataDir, ADMIN, 'verify-email')
  await appFetch(mail.link!, { redirect: 'manual' })
})

async function person(prefix: string, email = uniqueEmail(prefix)): Promise<Person> {
  const { token, userId } = await signUp(makeClient(svc.url).client, email)
  return { token, id: userId, email }
}

async function api<T = Record<string, unknown>>(
  method: string,
  path: string,
  who?: Person,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {}
  if (who) headers.authorization = `Bearer ${who.token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await appFetch(`${svc.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as T }
}

const subscribeAs = (who: Person, sub: TestSubscription) =>
  api<{ id: string; endpoint: string }>('POST', '/api/notifications/subscriptions', who, sub)
const send = (who: Person, body: Record<string, unknown>) => api<Report>('POST', '/api/notifications/send', who, body)
const listSubs = async (who: Person) =>
  (await api<{ subscriptions: Array<{ id: string; endpoint: string }> }>('GET', '/api/notifications/subscriptions', who)).body.subscriptions
const message = (r: { plaintext: string | null }) => JSON.parse(r.plaintext ?? 'null') as Message

t.test('generated VAPID pairs have the encoding web-push and browsers take', async (t) => {
  // One private scalar in 256 starts with a zero byte: 500 pairs meet a few of those.
  const bad: string[] = []
  for (let i = 0; i < 500; i++) {
    const k = generateVapidKeys()
    if (Buffer.from(k.publicKey, 'base64url').length !== 65 || Buffer.from(k.privateKey, 'base64url').length !== 32)
      bad.push(JSON.stringify(k))
    else webpush.getVapidHeaders('https://push.example', 'mailto:a@example.com', k.publicKey, k.privateKey, 'aes128gcm')
  }
  t.same(bad, [], 'a 65-byte public point and a 32-byte private scalar every time, and web-push signs with each')
})

t.test('the VAPID public key is served', async (t) => {
  const res = await api<{ publicKey: string }>('GET', '/api/notifications/vapid-public-key')
  t.equal(res.status, 200)
  const raw = Buffer.from(res.body.publicKey, 'base64url')
  t.equal(raw.length, 65, '65 bytes')
  t.equal(raw[0], 0x04, 'an uncompressed P-256 point, as pushManager.subscribe wants')
  vapidKey = res.body.publicKey
})

t.test('subscriptions: validated, per user, deduplicated by endpoint, removed only by their owner', async (t) => {
  const sub = push.subscribe('alice-laptop')
  t.equal((await api('POST', '/api/notifications/subscriptions', undefined, sub)).status, 401, 'needs a session')

  const http = await subscribeAs(alice, { ...sub, endpoint: sub.endpoint.replace('https:', 'http:') })
  t.equal(http.status, 400, 'http endpoint refused')
  t.match(http.body, { code: 'INVALID_SUBSCRIPTION', message: /https/ })
  const elsewhere = await subscribeAs(alice, { ...sub, endpoint: 'https://push.evil.example/x' })
  t.equal(elsewhere.status, 400, 'a host that is not an allowed push service is refused')
  t.match(elsewhere.body, { code: 'PUSH_SERVICE_NOT_ALLOWED' })
  const badKey = await subscribeAs(alice, { ...sub, keys: { ...sub.keys, p256dh: Buffer.alloc(65, 1).toString('base64url') } })
  t.equal(badKey.status, 400, 'p256dh must be an uncompressed point')
  const noAuth = await api('POST', '/api/notifications/subscriptions', alice, { endpoint: sub.endpoint, keys: { p256dh: sub.keys.p256dh } })
  t.equal(noAuth.status, 400, 'keys.auth is required')
  t.match(noAuth.body, { code: 'VALIDATION_ERROR' })

  const first = await subscribeAs(alice, sub)
  t.equal(first.status, 201, 'created')
  t.equal(first.body.endpoint, sub.endpoint)
  const again = await subscribeAs(alice, sub)
  t.equal(again.status, 200, 'the same endpoint again is not a second subscription')
  t.equal(again.body.id, first.body.id)
  t.same(
    (await listSubs(alice)).map((s) => s.id),
    [first.body.id],
    'one subscription listed',
  )
  t.same(await listSubs(bob), [], "bob sees none of alice's")

  const foreign = await api('DELETE', '/api/notifications/subscriptions', bob, { id: first.body.id })
  t.equal(foreign.status, 404, "bob cannot remove alice's subscription")
  t.equal((await listSubs(alice)).length, 1)
  const byEndpoint = await api<{ success: boolean; id: string }>('DELETE', '/api/notifications/subscriptions', alice, {
    endpoint: sub.endpoint,
  })
  t.equal(byEndpoint.status, 200)
  t.same(byEndpoint.body, { success: true, id: first.body.id })
  t.same(await listSubs(alice), [], 'removed by endpoint')
  t.equal((await api('DELETE', '/api/notifications/subscriptions', alice, { endpoint: sub.endpoint })).status, 404, 'already gone')
})

t.test('a notification arrives at the push service signed with VAPID and encrypted for the browser', async (t) => {
  // Bound to the service's key, as a browser subscription is: a request signed otherwise is refused.
  const sub = push.subscribe('alice-phone', vapidKey)
  t.equal((await subscribeAs(alice, sub)).status, 201)
  const res = await send(alice, { title: 'Hello', body: 'Your frame says hi ✓', url: '/devices', urgency: 'high', ttl: 600 })
  t.equal(res.status, 200)
  t.equal(res.body.userId, alice.id)
  t.equal(res.body.sent, 1)
  t.equal(res.body.failed, 0)
  t.match(res.body.results, [{ status: 'sent', statusCode: 201, attempts: 1, endpointOrigin: push.origin }])

  const req = push.requestsFor('alice-phone')
  t.equal(req.length, 1, 'one request reached the push service')
  const r = req[0]!
  t.equal(r.vapidError, null, 'the VAPID JWT verifies with k, aud is the push origin, exp within 24 h')
  t.equal(r.vapidKey, vapidKey, 'k is the key the browser subscribed with')
  t.equal(r.jwt?.payload.aud, push.origin)
  t.equal(r.jwt?.payload.sub, 'mailto:ops@example.com', 'sub is VAPID_SUBJECT')
  t.equal(r.headers['content-encoding'], 'aes128gcm')
  t.equal(r.headers.ttl, '600')
  t.equal(r.headers.urgency, 'high')
  const msg = message(r)
  t.match(
    msg,
    { kind: 'message', title: 'Hello', body: 'Your frame says hi ✓', url: '/devices' },
    'the browser decrypts exactly what was sent',
  )
  t.ok(Date.parse(msg.sentAt) > 0)

  const defaults = await send(alice, { title: 'Defaults', body: '' })
  t.equal(defaults.body.sent, 1)
  const d = push.requestsFor('alice-phone')[1]!
  t.equal(d.headers.ttl, '86400', 'PUSH_TTL by default')
  t.equal(d.headers.urgency, 'normal')
  t.equal(message(d).url, null)
})

t.test('the encrypted body is capped at 4096 bytes: 3993 bytes of JSON fit, one more is refused', async (t) => {
  const sub = push.subscribe('alice-cap')
  await subscribeAs(alice, sub)
  // The JSON message around the body text: {"kind":"message","title":"T","body":"…","url":null,"sentAt":"<24 chars>"}
  const frame = Buffer.byteLength(JSON.stringify({ kind: 'message', title: 'T', body: '', url: null, sentAt: new Date().toISOString() }))
  const fits = await send(alice, { title: 'T', body: 'a'.repeat(3993 - frame) })
  t.equal(fits.status, 200)
  const capReq = push.requestsFor('alice-cap')
  t.equal(capReq.length, 1)
  t.equal(capReq[0]!.body.length, 4096, 'exactly the 4096-byte maximum on the wire')
  t.equal(message(capReq[0]!).body.length, 3993 - frame, 'and it decrypts whole')

  const before = push.received.length
  const over = await send(alice, { title: 'T', body: 'a'.repeat(3994 - frame) })
  t.equal(over.status, 413)
  t.match(over.body, { code: 'PAYLOAD_TOO_LARGE', message: /3993/ })
  t.equal(push.received.length, before, 'nothing was sent for the oversized message')
  await api('DELETE', '/api/notifications/subscriptions', alice, { endpoint: sub.endpoint })
})

t.test('a 410 from the push service removes the subscription; other answers are reported', async (t) => {
  const gone = push.subscribe('bob-old-browser')
  const live = push.subscribe('bob-browser')
  const broken = push.subscribe('bob-broken')
  const goneId = (await subscribeAs(bob, gone)).body.id
  await subscribeAs(bob, live)
  await subscribeAs(bob, broken)
  const unknown = push.subscribe('bob-unknown')
  const unknownId = (await subscribeAs(bob, unknown)).body.id
  push.script('bob-old-browser', [{ status: 410, body: 'subscription expired' }])
  push.script('bob-unknown', [{ status: 404, body: 'no such subscription' }])
  push.script('bob-broken', [{ status: 400, body: 'bad request' }])

  const res = await send(bob, { title: 'Three browsers', body: 'x' })
  t.equal(res.status, 200)
  t.equal(res.body.sent, 1)
  t.equal(res.body.failed, 1)
  t.equal(res.body.removed, 2, 'a 410 and a 404 both remove their subscription')
  const by = Object.fromEntries(res.body.results.map((r) => [r.subscriptionId, r]))
  t.match(by[goneId], { status: 'gone', statusCode: 410, attempts: 1 })
  t.match(by[unknownId], { status: 'gone', statusCode: 404, attempts: 1 })
  const failed = res.body.results.find((r) => r.status === 'failed')!
  t.match(failed, { statusCode: 400, attempts: 1, error: /bad request/ }, 'a 400 is not retried')
  t.equal(push.requestsFor('bob-broken').length, 1)

  const left = (await listSubs(bob)).map((s) => s.endpoint).sort()
  t.same(left, [live.endpoint, broken.endpoint].sort(), 'the 410 and 404 subscriptions are gone, the others stay')
  const next = await send(bob, { title: 'Again', body: 'y' })
  t.notOk(
    next.body.results.some((r) => r.subscriptionId === goneId),
    'the removed subscription is not tried again',
  )
  t.equal(push.requestsFor('bob-old-browser').length, 1)
  await api('DELETE', '/api/notifications/subscriptions', bob, { endpoint: broken.endpoint })
})

t.test('429 with Retry-After and 5xx are retried with backoff', async (t) => {
  const sub = push.subscribe('alice-busy')
  await subscribeAs(alice, sub)
  push.script('alice-busy', [{ status: 429, headers: { 'retry-after': '1' } }, { status: 503 }])
  const res = await send(alice, { title: 'Eventually', body: 'delivered' })
  t.equal(res.status, 200)
  const r = res.body.results.find((x) => x.attempts > 1)
  t.match(r, { status: 'sent', statusCode: 201, attempts: 3 }, 'delivered on the third attempt')
  const reqs = push.requestsFor('alice-busy')
  t.same(
    reqs.map((q) => q.answered),
    [429, 503, 201],
  )
  t.ok(reqs[1]!.at - reqs[0]!.at >= 1000, `the retry waited for Retry-After: 1 (${reqs[1]!.at - reqs[0]!.at} ms)`)
  t.equal(message(reqs[2]!).body, 'delivered', 'the retried message decrypts')

  push.script('alice-busy', [{ status: 429, headers: { 'retry-after': '3600' } }])
  const later = await send(alice, { title: 'Later', body: 'not now' })
  t.match(
    later.body.results.find((x) => x.status === 'failed'),
    { statusCode: 429, attempts: 1, error: /retry after 3600 s/ },
    'a Retry-After beyond PUSH_MAX_RETRY_WAIT is reported, not waited for',
  )
  await api('DELETE', '/api/notifications/subscriptions', alice, { endpoint: sub.endpoint })
})

t.test('who may notify whom', async (t) => {
  const sub = push.subscribe('bob-target')
  await subscribeAs(bob, sub)
  const dev = await pairDevice(svc, bob.token, { name: "Bob's frame" })

  const toBob = await send(alice, { title: 'Hi Bob', body: 'x', userId: bob.id })
  t.equal(toBob.status, 403, 'a user may not notify another user')
  t.match(toBob.body, { code: 'FORBIDDEN' })
  const viaDevice = await send(alice, { title: 'Hi Bob', body: 'x', deviceId: dev.deviceId })
  t.equal(viaDevice.status, 404, 'nor reach the owner of a device she cannot see (it is not revealed)')
  const both = await send(alice, { title: 'x', body: 'x', deviceId: dev.deviceId, userId: bob.id })
  t.equal(both.status, 400)
  t.equal(push.requestsFor('bob-target').length, 0, 'nothing reached bob')

  const own = await send(bob, { title: 'About my frame', body: 'x', deviceId: dev.deviceId })
  t.equal(own.status, 200)
  t.equal(own.body.userId, bob.id, "deviceId targets the device's owner")
  t.equal(message(await push.waitFor('bob-target', 1)).title, 'About my frame')

  const byAdmin = await send(admin, { title: 'From the admin', body: 'maintenance tonight', userId: bob.id })
  t.equal(byAdmin.status, 200, 'an admin may notify any user')
  t.equal(byAdmin.body.userId, bob.id)
  t.equal(message(await push.waitFor('bob-target', 2)).title, 'From the admin')
  const adminViaDevice = await send(admin, { title: 'Device owner', body: 'x', deviceId: dev.deviceId })
  t.equal(adminViaDevice.body.userId, bob.id, "and any device's owner")
  t.equal((await send(admin, { title: 'x', body: 'x', userId: 'no-such-user' })).status, 404)
  t.equal((await api('POST', '/api/notifications/send', undefined, { title: 'x', body: 'x' })).status, 401)

  // A member of Bob's organization sees its devices but may not notify their owner.
  const org = await api<{ id: string }>('POST', '/api/auth/organization/create', bob, { name: 'Bob Co', slug: `bob-co-${Date.now()}` })
  await svc.app.auth.api.addMember({ body: { userId: alice.id, organizationId: org.body.id, role: 'member' } })
  const orgDevice = await pairDevice(svc, bob.token, { name: 'Lobby', organizationId: org.body.id })
  t.equal((await api('GET', `/api/device/${orgDevice.deviceId}`, alice)).status, 200, 'alice, a member, sees the lobby frame')
  const before = push.requestsFor('bob-target').length
  const viaOrgDevice = await send(alice, { title: 'Click me', body: 'x', url: 'https://evil.example.com', deviceId: orgDevice.deviceId })
  t.equal(viaOrgDevice.status, 403, 'but may not notify its owner through it')
  t.match(viaOrgDevice.body, { code: 'FORBIDDEN' })
  t.equal(push.requestsFor('bob-target').length, before, 'nothing reached bob')
})

t.test('a Better Auth JWT is accepted like the session it came from', async (t) => {
  const jwt = (
    (await (await appFetch(`${svc.url}/api/auth/token`, { headers: { authorization: `Bearer ${alice.token}` } })).json()) as {
      token: string
    }
  ).token
  const res = await appFetch(`${svc.url}/api/notifications/subscriptions`, { headers: { authorization: `Bearer ${jwt}` } })
  t.equal(res.status, 200)
  const prefs = await appFetch(`${svc.url}/api/notifications/preferences`, { headers: { authorization: `Bearer ${jwt}` } })
  t.equal(prefs.status, 200)
  const upload = await appFetch(`${svc.url}/api/upload/url?key=uploads/${alice.id}/none.png`, {
    headers: { authorization: `Bearer ${jwt}` },
  })
  t.equal(upload.status, 404, 'uploads take it too (no such upload: 404, not 401)')
  const forged = await appFetch(`${svc.url}/api/notifications/subscriptions`, {
    headers: { authorization: `Bearer ${jwt.slice(0, -4)}AAAA` },
  })
  t.equal(forged.status, 401)
})

t.test('a finished generation notifies its owner, unless they switched it off', async (t) => {
  const carol = await person('carol')
  const sub = push.subscribe('carol-phone', vapidKey)
  await subscribeAs(carol, sub)
  const job = await api<{ id: string }>('POST', '/api/generate', carol, { prompt: { text: 'a paper crane' } })
  t.equal(job.status, 202)
  const done = message(await push.waitFor('carol-phone', 1, 20_000))
  t.equal(done.kind, 'generation')
  t.equal(done.title, 'Your image is ready')
  t.match(done.body, /a paper crane/)
  t.equal(done.url, `${svc.url}/`, 'a job for no device leads to the device list (a device’s job: its page)')

  await api('POST', '/api/generate', carol, { prompt: { text: '!fail on purpose' } })
  const failure = message(await push.waitFor('carol-phone', 2, 20_000))
  t.equal(failure.title, 'Image generation failed')
  t.equal(failure.url, `${svc.url}/`)

  t.equal((await api('PATCH', '/api/notifications/preferences', carol, { generationResults: false })).status, 200)
  const quiet = await api<{ id: string }>('POST', '/api/generate', carol, { prompt: { text: 'a quiet one' } })
  await eventually(
    async () => (await api<{ status: string }>('GET', `/api/generate/${quiet.body.id}`, carol)).body.status === 'succeeded',
    20_000,
  )
  // The job reads as succeeded just before its notification would go out: a message sent after
  // it must be the next one to arrive.
  await new Promise((r) => setTimeout(r, 300))
  await send(carol, { title: 'Marker', body: 'x' })
  t.equal(message(await push.waitFor('carol-phone', 3)).title, 'Marker', 'switched off: the next message is not about the generation')
  t.equal(push.requestsFor('carol-phone').length, 3)
})

t.test('device online/offline notifies the owner, per their preference, and not on a takeover', async (t) => {
  const owner = await person('presence-owner')
  const sub = push.subscribe('owner-browser')
  await subscribeAs(owner, sub)
  t.same(
    (await api('GET', '/api/notifications/preferences', owner)).body,
    { generationResults: true, devicePresence: true, batteryLow: true, deviceSilent: true, firmwareFailed: true },
    'everything on by default',
  )
  const dev = await pairDevice(svc, owner.token, { name: 'Hall frame' })

  // The owner's app watches the device's events; each is published after the notification decision.
  const watcher = await connect(mqttUrl(svc), { clientId: `push-watch-${process.pid}`, username: 'user', password: owner.token })
  t.teardown(() => watcher.end(true))
  await subscribe(watcher, topicFor(dev.deviceId, 'events'))
  const nextEvent = () => nextMessage<{ type: string; data: { reason?: string } }>(watcher, topicFor(dev.deviceId, 'events'))
  const asDevice = () => connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })

  let ev = nextEvent()
  const first = await asDevice()
  t.equal((await ev).payload.type, 'device.connected')
  const online = message(await push.waitFor('owner-browser', 1))
  t.match(online, { kind: 'device-presence', title: 'Hall frame is online', url: `/devices/${dev.deviceId}` })
  t.equal(push.requestsFor('owner-browser')[0]!.headers.urgency, 'low')
  t.ok(push.requestsFor('owner-browser')[0]!.headers.topic, 'a topic, so a newer state replaces an undelivered one')

  // Takeover: the device connects again while its old connection is open.
  ev = nextEvent()
  const evAfter = ev.then(() => nextEvent())
  const second = await asDevice()
  t.teardown(() => second.end(true))
  const events = [(await ev).payload, (await evAfter).payload]
  t.same(events.map((e) => e.type).sort(), ['device.connected', 'device.disconnected'])
  t.equal(events.find((e) => e.type === 'device.disconnected')!.data.reason, 'takeover')
  first.end(true)
  await svc.app.notifier.idle()
  t.equal(push.requestsFor('owner-browser').length, 1, 'a takeover is neither offline nor online')

  ev = nextEvent()
  await close(second)
  t.equal((await ev).payload.type, 'device.disconnected')
  const offline = message(await push.waitFor('owner-browser', 2))
  t.match(offline, { kind: 'device-presence', title: 'Hall frame is offline', body: /went offline \(client disconnect\)/ })

  const patched = await api('PATCH', '/api/notifications/preferences', owner, { devicePresence: false })
  t.same(patched.body, { generationResults: true, devicePresence: false, batteryLow: true, deviceSilent: true, firmwareFailed: true })
  t.same((await api('GET', '/api/notifications/preferences', owner)).body, {
    generationResults: true,
    devicePresence: false,
    batteryLow: true,
    deviceSilent: true,
    firmwareFailed: true,
  })
  t.equal((await api('PATCH', '/api/notifications/preferences', owner, {})).status, 400, 'an empty change is refused')
  ev = nextEvent()
  const third = await asDevice()
  t.equal((await ev).payload.type, 'device.connected')
  ev = nextEvent()
  await close(third)
  await ev
  await svc.app.notifier.idle()
  t.equal(push.requestsFor('owner-browser').length, 2, 'with devicePresence off, no presence notifications')

  // Other modules call app.notifier.notifyUser with a kind; preferences apply per kind.
  const gen = await svc.app.notifier.notifyUser(owner.id, 'generation', {
    title: 'Your image is ready',
    body: 'Sunset over the sea',
    url: '/images/1',
  })
  t.match(gen, { sent: 1 })
  t.match(message(await push.waitFor('owner-browser', 3)), { kind: 'generation', title: 'Your image is ready', url: '/images/1' })
  await api('PATCH', '/api/notifications/preferences', owner, { generationResults: false })
  t.same(await svc.app.notifier.notifyUser(owner.id, 'generation', { title: 'Another', body: 'x' }), { skipped: 'preference' })
  t.equal(push.requestsFor('owner-browser').length, 3)

  // A health alert is a notification of its own kind, under its own switch (test/health/ has the rules).
  const frame = await asDevice()
  t.teardown(() => frame.end(true))
  frame.publish(
    `devices/${dev.deviceId}/up/status`,
    JSON.stringify({ battery: 9, firmware: '1.0', shownImageId: null, configVersion: 1 }),
    { qos: 1 },
  )
  t.match(message(await push.waitFor('owner-browser', 4)), {
    kind: 'battery-low',
    title: 'Hall frame: battery low',
    url: `/devices/${dev.deviceId}`,
  })
  await close(watcher)
})

t.test('a fleet coming online at once: the first device at once, the rest in one message', async (t) => {
  const owner = await person('fleet-owner')
  await subscribeAs(owner, push.subscribe('fleet-browser'))
  const fleet = await Promise.all(Array.from({ length: 8 }, (_, i) => pairDevice(svc, owner.token, { name: `Frame ${i + 1}` })))
  const clients = await Promise.all(
    fleet.map((dev) => connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })),
  )
  t.teardown(() => {
    for (const c of clients) c.end(true)
  })
  const first = message(await push.waitFor('fleet-browser', 1))
  t.match(first, { kind: 'device-presence', title: /^Frame \d is online$/ })
  const digest = message(await push.waitFor('fleet-browser', 2))
  t.match(digest, { kind: 'device-presence', title: '7 devices are online', url: '/devices' })
  t.match(digest.body, /^Online: (Frame \d, ){4}Frame \d and 2 more\.$/)
  const requests = push.requestsFor('fleet-browser')
  t.ok(requests[0]!.headers.topic, "the single change has its device's topic")
  t.equal(requests[1]!.headers.topic, undefined, 'the digest has none, so nothing replaces it')
  // A straggler would open the next window at the digest and be sent when it ends.
  await new Promise((r) => setTimeout(r, 3500))
  await svc.app.notifier.idle()
  t.equal(push.requestsFor('fleet-browser').length, 2, 'two pushes for eight devices')
})

t.test('generated VAPID keys are kept: same key after a restart, private key sealed in the database', async (t) => {
  const [row] = await svc.app.database.db.select().from(serviceSetting).where(eq(serviceSetting.key, 'vapid.keys'))
  t.ok(row, 'kept in the database')
  const stored = JSON.parse(row!.value) as { publicKey: string; privateKey: string }
  t.equal(stored.publicKey, vapidKey)
  t.equal(stored.privateKey.split('.').length, 3, 'the private key is stored sealed (iv.tag.ciphertext), not as the raw key')

  const reuse = { dataDir: svc.dataDir, databaseUrl: svc.config.databaseUrl, redisPrefix: svc.config.redisPrefix }
  await svc.close()
  const again = await startApp(t, { reuse, env: { PUSH_CA_FILE: push.caFile, PUSH_ENDPOINT_HOSTS: '127.0.0.1' } })
  const res = await appFetch(`${again.url}/api/notifications/vapid-public-key`)
  t.equal(
    ((await res.json()) as { publicKey: string }).publicKey,
    vapidKey,
    'the same public key after a restart, so subscriptions stay valid',
  )

  // And the restarted service still signs with the kept private key: a push to bob verifies.
  // Sessions live in the database, so bob's token from before the restart still works.
  const token = bob.token
  const before = push.requestsFor('bob-browser').length
  const sent = await appFetch(`${again.url}/api/notifications/send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ title: 'After restart', body: 'still signed' }),
  })
  t.equal(sent.status, 200)
  const r = await push.waitFor('bob-browser', before + 1)
  t.equal(r.vapidError, null)
  t.equal(r.vapidKey, vapidKey)
  t.equal(message(r).title, 'After restart')
})

t.test('VAPID keys from the configuration are used as given', async (t) => {
  const keys = webpush.generateVAPIDKeys()
  const configured = await startApp(t, {
    env: {
      PUSH_CA_FILE: push.caFile,
      PUSH_ENDPOINT_HOSTS: '127.0.0.1',
      VAPID_PUBLIC_KEY: keys.publicKey,
      VAPID_PRIVATE_KEY: keys.privateKey,
      VAPID_SUBJECT: 'https://ops.example.com/contact',
    },
  })
  const res = await appFetch(`${configured.url}/api/notifications/vapid-public-key`)
  t.equal(((await res.json()) as { publicKey: string }).publicKey, keys.publicKey)
  const { token } = await signUp(makeClient(configured.url).client, uniqueEmail('vapid-config'))
  const sub = push.subscribe('configured-keys')
  const subRes = await appFetch(`${configured.url}/api/notifications/subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(sub),
  })
  t.equal(subRes.status, 201)
  await appFetch(`${configured.url}/api/notifications/send`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ title: 'Configured', body: 'keys' }),
  })
  const r = await push.waitFor('configured-keys')
  t.equal(r.vapidError, null, 'signed with the configured private key')
  t.equal(r.vapidKey, keys.publicKey)
  t.equal(r.jwt?.payload.sub, 'https://ops.example.com/contact')
  t.equal(message(r).title, 'Configured')
})
