// MQTT over WebSocket at /mqtt on the HTTP port: the same authentication, rules and presence as TCP.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import WebSocket from 'ws'
import { topicFor } from '../../src/mqtt/contract.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

let svc: TestApp
let token: string
let email: string
let wsUrl: string

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  email = uniqueEmail('ws')
  ;({ token } = await signUp(makeClient(svc.url).client, email))
  wsUrl = `${svc.url.replace(/^http/, 'ws')}/mqtt`
})

function granted(client: MqttClient, topic: string): Promise<number> {
  return new Promise((resolve, reject) => {
    client.subscribe(topic, { qos: 1 }, (err, _subs, packet) => {
      const code = (packet as { granted?: number[] } | undefined)?.granted?.[0]
      if (code === undefined) reject(err ?? new Error('no SUBACK'))
      else resolve(code)
    })
  })
}

async function refusalCode(p: Promise<MqttClient>): Promise<number | undefined> {
  try {
    const c = await p
    c.end(true)
    return 0
  } catch (err) {
    return (err as { code?: number }).code
  }
}

t.test('a companion app over WebSocket follows its device', async (t) => {
  const dev = await pairDevice(svc, token)
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('ws-other'))
  const theirs = await pairDevice(svc, other.token)

  const app = await connect(wsUrl, { clientId: `ws-app-${process.pid}`, username: 'user', password: token })
  t.teardown(() => app.end(true))
  t.equal(app.connected, true)
  t.equal(await granted(app, topicFor(dev.deviceId, 'state')), 1)
  t.equal(await granted(app, topicFor(dev.deviceId, 'events')), 1)
  t.equal(await granted(app, topicFor(theirs.deviceId, 'state')), 128, "someone else's device is refused")
  t.equal(await granted(app, '#'), 128)

  // The device connects over TCP; the app sees it over WebSocket.
  const event = nextMessage<{ type: string; data: { clientId: string; remoteAddress: string } }>(app, topicFor(dev.deviceId, 'events'))
  const state = nextMessage<{ online: boolean; since: string }>(app, topicFor(dev.deviceId, 'state'))
  const d = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
  const ev = await event
  t.equal(ev.payload.type, 'device.connected')
  t.equal(ev.payload.data.clientId, dev.deviceId)
  t.equal((await state).payload.online, true)

  const gone = nextMessage<{ type: string; data: { reason: string } }>(app, topicFor(dev.deviceId, 'events'))
  const offline = nextMessage<{ online: boolean }>(app, topicFor(dev.deviceId, 'state'))
  await close(d)
  t.equal((await gone).payload.data.reason, 'client_disconnect')
  t.equal((await offline).payload.online, false)

  t.equal(
    await refusalCode(connect(wsUrl, { clientId: `ws-bad-${process.pid}`, username: 'user', password: 'nope' })),
    4,
    'a bad token is refused over WebSocket too',
  )
  await close(app)
})

t.test('a device over WebSocket connects, gets commands and reports', async (t) => {
  const dev = await pairDevice(svc, token)
  t.equal(await refusalCode(connect(wsUrl, { clientId: dev.deviceId, username: dev.deviceId, password: 'wrong' })), 4)

  const c = await connect(wsUrl, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
  t.teardown(() => c.end(true))
  const connected = await eventually(async () => {
    const r = await appFetch(`${svc.url}/api/device/${dev.deviceId}/events?limit=20`, { headers: { authorization: `Bearer ${token}` } })
    const body = (await r.json()) as { events: Array<{ type: string; data: Record<string, unknown> }> }
    return body.events.find((e) => e.type === 'device.connected')
  })
  t.match(connected.data.remoteAddress, /127\.0\.0\.1/)

  const cfg = nextMessage<{ version: number }>(c, dev.topics.config!)
  t.equal(await subscribe(c, dev.topics.config!), 1)
  const version = (await cfg).payload.version
  t.equal(await subscribe(c, dev.topics.cmd!), 1)
  t.equal(await granted(c, 'devices/+/cmd'), 128)

  const cmd = nextMessage<{ commandId: string; command: string }>(c, dev.topics.cmd!)
  const res = await appFetch(`${svc.url}/api/device/${dev.deviceId}/command`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'refresh' }),
  })
  t.equal(res.status, 202)
  const { commandId } = (await res.json()) as { commandId: string }
  t.equal((await cmd).payload.commandId, commandId)

  await new Promise<void>((resolve, reject) =>
    c.publish(
      dev.topics.status!,
      JSON.stringify({ battery: 70, firmware: '3.0.0', shownImageId: null, configVersion: version }),
      { qos: 1 },
      (e) => (e ? reject(e) : resolve()),
    ),
  )
  await eventually(async () => {
    const r = await appFetch(`${svc.url}/api/device/${dev.deviceId}`, { headers: { authorization: `Bearer ${token}` } })
    const d = (await r.json()) as { isSynced: boolean; isActive: boolean }
    return d.isSynced && d.isActive
  })
  t.pass('its status report over WebSocket synced it')
  await close(c)
})

t.test('garbage on a WebSocket closes only that connection', async (t) => {
  const dev = await pairDevice(svc, token)
  const good = await connect(wsUrl, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
  t.teardown(() => good.end(true))
  t.equal(await subscribe(good, dev.topics.cmd!), 1)

  const ws = new WebSocket(wsUrl, 'mqtt')
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()))
  ws.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  ws.send(Buffer.from([0x00, 0x00, 0xff, 0xff]))
  await closed
  t.pass('the broker closed the WebSocket that sent garbage')

  t.equal(good.connected, true)
  const got = nextMessage<{ marker: string }>(good, dev.topics.cmd!)
  await svc.app.broker!.publish(dev.deviceId, 'cmd', { marker: 'still-here' })
  t.equal((await got).payload.marker, 'still-here')
  await close(good)

  // Other paths on the HTTP port are not MQTT.
  const elsewhere = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/not-mqtt`, 'mqtt')
  const outcome = await new Promise<string>((resolve) => {
    elsewhere.once('open', () => resolve('open'))
    elsewhere.once('error', () => resolve('refused'))
    elsewhere.once('unexpected-response', (_req, res) => resolve(`refused ${res.statusCode}`))
  })
  elsewhere.terminate()
  t.match(outcome, /^refused/, 'no WebSocket upgrade outside /mqtt')
})

t.test('a browser page signs in to the broker with its session cookie, and only a page of this service may', async (t) => {
  const signIn = await appFetch(`${svc.url}/api/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ email, password: 'correct-horse-battery' }),
  })
  t.equal(signIn.status, 200)
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ')
  const mine = await pairDevice(svc, token)
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('ws-cookie-other'))
  const theirs = await pairDevice(svc, other.token)
  const asBrowser = (headers: Record<string, string>) =>
    connect(wsUrl, { clientId: `console-${Math.random().toString(16).slice(2, 10)}`, username: 'user', wsOptions: { headers } })

  const page = await asBrowser({ cookie, origin: svc.url })
  t.teardown(() => page.end(true))
  t.equal(page.connected, true, 'the cookie of a page of this service is accepted, no password')
  t.equal(await granted(page, topicFor(mine.deviceId, 'state')), 1, "and it watches the user's own device")
  t.equal(await granted(page, topicFor(theirs.deviceId, 'state')), 128, "not another user's")

  t.equal(await refusalCode(asBrowser({ cookie, origin: 'https://evil.example' })), 5, 'a page of another site is refused (not authorized)')
  t.equal(await refusalCode(asBrowser({ cookie })), 5, 'so is a connection without an Origin')
  t.equal(await refusalCode(asBrowser({ origin: svc.url })), 4, 'no cookie and no password: bad user name or password')
  t.equal(await refusalCode(asBrowser({ cookie: 'better-auth.session_token=forged.value', origin: svc.url })), 4, 'a forged cookie')

  const signOut = await appFetch(`${svc.url}/api/auth/sign-out`, {
    method: 'POST',
    headers: { cookie, origin: svc.url, 'content-type': 'application/json' },
    body: '{}',
  })
  t.equal(signOut.status, 200)
  await eventually(async () => !page.connected)
  t.pass('signing out ends the live connection')
  t.equal(await refusalCode(asBrowser({ cookie, origin: svc.url })), 4, 'and the cookie is refused afterwards')
})

t.test('behind a trusted proxy the forwarded address is the WebSocket client: its rate and its events', async (t) => {
  const start = (env: Record<string, string>) => startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1', ...env } })
  const proxied = await start({ TRUST_PROXY: '127.0.0.1' })
  const direct = await start({})
  for (const [name, s] of [
    ['proxied', proxied],
    ['direct', direct],
  ] as const) {
    const { token: owner } = await signUp(makeClient(s.url).client, uniqueEmail(`ws-${name}`))
    const dev = await pairDevice(s, owner)
    const url = `${s.url.replace(/^http/, 'ws')}/mqtt`
    const from = (address: string) => ({
      clientId: dev.deviceId,
      username: dev.deviceId,
      password: dev.password,
      wsOptions: { headers: { 'x-forwarded-for': address } },
    })
    const first = await connect(url, from('203.0.113.7'))
    await close(first)
    const second = connect(url, from('203.0.113.8'))
    if (name === 'proxied') {
      await close(await second)
      t.pass('a second client behind the proxy has its own connection rate')
      await t.rejects(connect(url, from('203.0.113.7')), 'while the first one is over its rate')
      const events = await eventually(async () => {
        const res = await appFetch(`${s.url}/api/device/${dev.deviceId}/events`, { headers: { authorization: `Bearer ${owner}` } })
        const body = (await res.json()) as { events: Array<{ type: string; data: { remoteAddress?: string } }> }
        const seen = body.events.filter((e) => e.type === 'device.connected').map((e) => e.data.remoteAddress)
        return seen.length >= 2 ? seen : undefined
      })
      t.same([...events].sort(), ['203.0.113.7', '203.0.113.8'], 'presence events name the forwarded addresses')
    } else {
      await t.rejects(second, 'without TRUST_PROXY the header is ignored: both are the socket address, over its rate')
    }
  }
})
