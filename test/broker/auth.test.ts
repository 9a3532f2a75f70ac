// Who may connect to the embedded broker: paired devices with their secret, companion apps with a
// session token; everyone else gets the CONNACK return code MQTT 3.1.1 section 3.2.2.3 names.
import t from 'tap'
import type { ErrorWithReasonCode } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

let svc: TestApp
let token: string

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  const { client } = makeClient(svc.url)
  ;({ token } = await signUp(client, uniqueEmail('mqtt-auth')))
})

const asDevice = (dev: PairedDevice, over: { password?: string; clientId?: string; username?: string } = {}) =>
  connect(mqttUrl(svc), {
    clientId: over.clientId ?? dev.deviceId,
    username: over.username ?? dev.deviceId,
    password: over.password ?? dev.password,
  })

/** The CONNACK refusal a connection attempt ended with. */
async function refusal(attempt: Promise<unknown>): Promise<{ code: number | undefined; message: string }> {
  try {
    const c = (await attempt) as { end(force: boolean): void }
    c.end(true)
    return { code: 0, message: 'accepted' }
  } catch (err) {
    return { code: (err as ErrorWithReasonCode).code, message: (err as Error).message }
  }
}

async function api(method: string, path: string, body?: unknown, bearer = token) {
  const res = await appFetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

t.test('a paired device connects with its credentials and gets its retained config', async (t) => {
  const dev = await pairDevice(svc, token)
  t.equal(dev.clientId, dev.deviceId, 'the client id handed out is the device id')
  t.equal(dev.mqttUrl.startsWith('mqtt'), true)
  const c = await asDevice(dev)
  t.teardown(() => c.end(true))
  t.equal(c.connected, true)
  const cfg = nextMessage<{ version: number; name: string }>(c, dev.topics.config!)
  t.equal(await subscribe(c, dev.topics.config!), 1)
  const got = await cfg
  t.equal(got.retain, true, 'config is retained')
  t.equal(got.payload.name, 'Test frame')
  t.equal(typeof got.payload.version, 'number')
  await close(c)
})

t.test('a wrong password is refused with CONNACK 4', async (t) => {
  const dev = await pairDevice(svc, token)
  const r = await refusal(asDevice(dev, { password: 'not-the-secret' }))
  t.equal(r.code, 4)
  t.match(r.message, /Bad username or password/)
  // An empty password too.
  t.equal((await refusal(asDevice(dev, { password: '' }))).code, 4)
  // The right secret still works afterwards.
  const ok = await asDevice(dev)
  t.equal(ok.connected, true)
  await close(ok)
})

t.test('an unknown device is refused with CONNACK 4', async (t) => {
  const ghost = 'c0ffee00-0000-4000-8000-000000000000'
  const r = await refusal(connect(mqttUrl(svc), { clientId: ghost, username: ghost, password: 'x'.repeat(43) }))
  t.equal(r.code, 4)
  t.match(r.message, /Bad username or password/)
})

t.test('a client id other than the device id is refused with CONNACK 2', async (t) => {
  const dev = await pairDevice(svc, token)
  const r = await refusal(asDevice(dev, { clientId: `${dev.deviceId}-2` }))
  t.equal(r.code, 2)
  t.match(r.message, /Identifier rejected/)
  const other = await pairDevice(svc, token)
  // Someone else's device id as client id with this device's credentials.
  t.equal((await refusal(asDevice(dev, { clientId: other.deviceId }))).code, 2)
})

t.test('a revoked device is refused with CONNACK 5', async (t) => {
  const dev = await pairDevice(svc, token)
  const res = await api('POST', '/api/device/disconnect', { deviceId: dev.deviceId })
  t.equal(res.status, 200)
  t.equal(res.body.success, true)
  const r = await refusal(asDevice(dev))
  t.equal(r.code, 5)
  t.match(r.message, /Not authorized/)
})

t.test('a deleted device is refused with CONNACK 4', async (t) => {
  const dev = await pairDevice(svc, token)
  const c = await asDevice(dev)
  await close(c)
  const res = await api('DELETE', '/api/device/delete', { deviceId: dev.deviceId })
  t.equal(res.status, 200)
  t.equal(res.body.success, true)
  const r = await refusal(asDevice(dev))
  t.equal(r.code, 4)
  t.match(r.message, /Bad username or password/)
})

t.test('a companion app connects with its session token; a bad token is refused', async (t) => {
  const dev = await pairDevice(svc, token)
  const app = await connect(mqttUrl(svc), { clientId: `app-${Date.now()}`, username: 'user', password: token })
  t.teardown(() => app.end(true))
  t.equal(app.connected, true)
  // The session lets it watch its own device.
  const state = nextMessage<{ online: boolean }>(app, `devices/${dev.deviceId}/state`)
  t.equal(await subscribe(app, `devices/${dev.deviceId}/state`), 1)
  const d = await asDevice(dev)
  t.equal((await state).payload.online, true)
  await close(d)
  await close(app)

  const bad = await refusal(connect(mqttUrl(svc), { clientId: `app-bad-${Date.now()}`, username: 'user', password: 'not-a-session-token' }))
  t.equal(bad.code, 4)
  t.match(bad.message, /Bad username or password/)

  // A token whose session was signed out no longer works.
  const { client } = makeClient(svc.url)
  const other = await signUp(client, uniqueEmail('mqtt-auth-out'))
  const before = await connect(mqttUrl(svc), { clientId: `app-out-${Date.now()}`, username: 'user', password: other.token })
  await close(before)
  const out = await appFetch(`${svc.url}/api/auth/sign-out`, {
    method: 'POST',
    headers: { authorization: `Bearer ${other.token}`, origin: svc.url },
  })
  t.equal(out.status, 200)
  await eventually(
    async () =>
      (await refusal(connect(mqttUrl(svc), { clientId: `app-out2-${Date.now()}`, username: 'user', password: other.token }))).code === 4,
  )
  t.pass('a signed-out token is refused')

  // An app may not pose as a device by using a device id as its client id.
  t.equal((await refusal(connect(mqttUrl(svc), { clientId: dev.deviceId, username: 'user', password: token }))).code, 2)
})

t.test('refusals are counted', async (t) => {
  t.ok(svc.app.broker!.stats.refusedConnections >= 8, `${svc.app.broker!.stats.refusedConnections} refused connections`)
})
