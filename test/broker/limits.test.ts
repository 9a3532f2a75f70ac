// Limits and known aedes hazards as the device side sees them: a device that sends garbage or an
// oversized packet loses only its own connection, with a disconnect event saying why and nothing
// applied; companion apps get clean sessions only; a burst of service-side publishes while the
// subscriber leaves does not take the process down. The broker's limits themselves (malformed
// bytes, keepalive, empty client ids, queue, in-flight and connection-rate bounds) are tested on
// the bare broker over in-memory streams in server-limits.test.ts.
import { connect as tcpConnect, type Socket } from 'node:net'
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { connectBytes as connectPacket, remainingLength } from '../helpers/memory-mqtt.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

const MAX_PACKET = 2048

let svc: TestApp
let token: string
/** A device that stays connected through every test, to show the broker keeps serving others. */
let bystander: PairedDevice
let bystanderClient: MqttClient

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000', MQTT_MAX_PACKET_SIZE: String(MAX_PACKET) } })
  ;({ token } = await signUp(makeClient(svc.url).client, uniqueEmail('limits')))
  bystander = await pairDevice(svc, token, { name: 'Bystander' })
  bystanderClient = await asDevice(bystander)
  await subscribe(bystanderClient, bystander.topics.cmd!, 1)
})
t.teardown(() => bystanderClient?.end(true))

const asDevice = (dev: PairedDevice) => connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })

async function api<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await appFetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: res.status, body: (await res.json()) as T }
}

type Ev = { type: string; data: Record<string, unknown> }
const events = async (id: string) => (await api<{ events: Ev[] }>('GET', `/api/device/${id}/events?limit=100`)).body.events

type Tap = { equal: typeof t.equal }

/** The bystander still gets a command sent over HTTP. */
async function bystanderStillServed(t: Tap) {
  t.equal(bystanderClient.connected, true, 'the other device is still connected')
  const got = nextMessage<{ commandId: string }>(bystanderClient, bystander.topics.cmd!)
  const sent = await api<{ commandId: string }>('POST', `/api/device/${bystander.deviceId}/command`, { command: 'identify' })
  t.equal(sent.status, 202)
  t.equal((await got).payload.commandId, sent.body.commandId, 'and receives a command afterwards')
}

/** A raw TCP connection to the broker that records what it receives and when it closes. */
function raw(): Promise<{ socket: Socket; received: () => Buffer; closed: Promise<void>; isClosed: () => boolean }> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(svc.app.mqttPort!, '127.0.0.1')
    let buf = Buffer.alloc(0)
    let isClosed = false
    const closed = new Promise<void>((r) =>
      socket.once('close', () => {
        isClosed = true
        r()
      }),
    )
    socket.on('data', (d) => (buf = Buffer.concat([buf, d])))
    socket.on('error', () => {})
    socket.once('connect', () => resolve({ socket, received: () => buf, closed, isClosed: () => isClosed }))
    socket.once('error', reject)
  })
}

/** Sends a CONNECT on a raw socket and resolves with the CONNACK return code. */
async function rawConnack(packet: Buffer) {
  const r = await raw()
  r.socket.write(packet)
  await eventually(async () => r.received().length >= 4 || r.isClosed())
  const b = r.received()
  if (b.length < 4 || b[0] !== 0x20) throw new Error(`no CONNACK (got ${b.toString('hex')})`)
  return { ...r, returnCode: b[3]!, sessionPresent: (b[2]! & 1) === 1 }
}

t.test('garbage from a connected device closes only its connection, with the reason in its event', async (t) => {
  // Garbage from a device after it connected: its own session ends (socket_error), nobody else's.
  const dev = await pairDevice(svc, token)
  const r = await rawConnack(connectPacket({ clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: true }))
  t.equal(r.returnCode, 0)
  await eventually(async () => (await events(dev.deviceId)).some((e) => e.type === 'device.connected'))
  r.socket.write(Buffer.from([0x00, 0x00, 0xde, 0xad]))
  await r.closed
  t.pass('the broker closed the connection that sent garbage')
  const ev = await eventually(async () => (await events(dev.deviceId)).find((e) => e.type === 'device.disconnected'))
  t.equal(ev.data.reason, 'socket_error')
  await bystanderStillServed(t)
  // The device itself can come back.
  const again = await asDevice(dev)
  t.equal(again.connected, true)
  await close(again)
})

t.test('a packet over the size limit closes only that connection', async (t) => {
  const dev = await pairDevice(svc, token)
  const c = await asDevice(dev)
  t.teardown(() => c.end(true))
  let closed = false
  c.once('close', () => (closed = true))
  c.on('error', () => {})

  // Under the limit: accepted and applied.
  const pad = 'x'.repeat(MAX_PACKET - 400)
  await new Promise<void>((resolve, reject) =>
    c.publish(dev.topics.status!, JSON.stringify({ battery: 50, firmware: 'small', configVersion: 1, pad }), { qos: 1 }, (e) =>
      e ? reject(e) : resolve(),
    ),
  )
  const before = await eventually(
    async () =>
      (await api<{ info: { firmware?: string } }>('GET', `/api/device/${dev.deviceId}`)).body.info.firmware === 'small' && 'small',
  )
  t.pass('a packet under the limit is accepted')

  // 10 KB: the broker closes the connection as soon as the header announces the length.
  c.publish(dev.topics.status!, JSON.stringify({ battery: 50, firmware: 'too-big', configVersion: 1, pad: 'y'.repeat(10 * 1024) }), {
    qos: 1,
  })
  await eventually(async () => closed)
  t.pass('the oversized publish closed the connection')
  const ev = await eventually(async () => (await events(dev.deviceId)).find((e) => e.type === 'device.disconnected'))
  t.equal(ev.data.reason, 'socket_error')
  t.equal(
    (await api<{ info: { firmware?: string } }>('GET', `/api/device/${dev.deviceId}`)).body.info.firmware,
    before,
    'nothing of it was applied',
  )
  await bystanderStillServed(t)

  // A connected device announcing a 20 MB PUBLISH is cut off as soon as the header arrives: the
  // event says socket_error (waiting for the bytes would have ended in a keepalive timeout).
  const big = await pairDevice(svc, token)
  const r = await rawConnack(
    connectPacket({ clientId: big.deviceId, username: big.deviceId, password: big.password, clean: true, keepalive: 600 }),
  )
  t.equal(r.returnCode, 0, 'connected first')
  await eventually(async () => (await events(big.deviceId)).some((e) => e.type === 'device.connected'))
  r.socket.write(Buffer.from([0x30, ...remainingLength(20 * 1024 * 1024)]))
  await r.closed
  const cut = await eventually(async () => (await events(big.deviceId)).find((e) => e.type === 'device.disconnected'))
  t.equal(cut.data.reason, 'socket_error', 'a 20 MB announcement closes the connection at once')
  await bystanderStillServed(t)
})

t.test('companion apps: clean sessions only, and a client id another account holds is refused', async (t) => {
  const persistent = await rawConnack(connectPacket({ clientId: 'my-phone', username: 'user', password: token, clean: false }))
  t.equal(persistent.returnCode, 2, 'a persistent app session is refused')
  await persistent.closed
  const mine = await connect(mqttUrl(svc), { clientId: 'shared-name', username: 'user', password: token })
  t.teardown(() => mine.end(true))
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('other-app'))
  const theirs = await rawConnack(connectPacket({ clientId: 'shared-name', username: 'user', password: other.token, clean: true }))
  t.equal(theirs.returnCode, 2, "another account cannot take over the app's client id")
  await theirs.closed
  t.equal(mine.connected, true, 'the first app stays connected')
  const again = await rawConnack(connectPacket({ clientId: 'shared-name', username: 'user', password: token, clean: true }))
  t.equal(again.returnCode, 0, 'the same account may reconnect under its own client id')
  again.socket.write(Buffer.from([0xe0, 0x00]))
  await again.closed
})

t.test('a device with an empty client id is refused (its client id must be its device id)', async (t) => {
  const dev = await pairDevice(svc, token)
  const devEmpty = await rawConnack(connectPacket({ clientId: '', username: dev.deviceId, password: dev.password, clean: true }))
  t.equal(devEmpty.returnCode, 2)
  await devEmpty.closed
  await bystanderStillServed(t)
})

t.test('20,000 service-side publishes while the subscriber leaves: the process survives', async (t) => {
  const dev = await pairDevice(svc, token)
  const c = await asDevice(dev)
  t.teardown(() => c.end(true))
  t.equal(await subscribe(c, dev.topics.cmd!, 1), 1)
  let received = 0
  const leftMidway = new Promise<void>((resolve) =>
    c.on('message', () => {
      received += 1
      if (received === 200) {
        c.end(true)
        resolve()
      }
    }),
  )

  const broker = svc.app.broker!
  const N = 20_000
  const all = Promise.allSettled(Array.from({ length: N }, (_, i) => broker.publish(dev.deviceId, 'cmd', { seq: i })))
  await leftMidway
  const results = await all
  t.equal(results.length, N)
  t.equal(results.filter((r) => r.status === 'rejected').length, 0, 'every publish completed')
  t.ok(received >= 200 && received < N, `the subscriber left midway (after ${received})`)

  // Still serving: the same device reconnects and gets a command; a new device connects.
  const back = await asDevice(dev)
  t.teardown(() => back.end(true))
  t.equal(await subscribe(back, dev.topics.cmd!, 1), 1)
  const got = nextMessage<{ commandId: string }>(back, dev.topics.cmd!)
  const sent = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, { command: 'refresh' })
  t.equal(sent.status, 202)
  // Stray burst messages may still be in flight to nobody; the command is what this device gets now.
  t.equal((await got).payload.commandId, sent.body.commandId)
  await close(back)
  const fresh = await pairDevice(svc, token)
  const fc = await asDevice(fresh)
  t.equal(fc.connected, true, 'a new connection is served')
  await close(fc)
  await bystanderStillServed(t)
})
