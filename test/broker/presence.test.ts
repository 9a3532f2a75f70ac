// Presence: every connect and disconnect of a device is an Event with its reason, isActive and
// last_seen_at follow, and the retained devices/{id}/state shows {online, since}.
import { connect as tcpConnect, type Socket } from 'node:net'
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { topicFor } from '../../src/mqtt/contract.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { connectBytes } from '../helpers/memory-mqtt.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

type Ev = { id: string; type: string; deviceId: string; userId: string | null; data: Record<string, unknown>; created_at: string }
type Detail = { isActive: boolean; last_seen_at: string | null }

let svc: TestApp
let token: string
let ownerId: string

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  ;({ token, userId: ownerId } = await signUp(makeClient(svc.url).client, uniqueEmail('presence')))
})

const asDevice = (dev: PairedDevice) => connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })

let appSeq = 0
const asApp = () => connect(mqttUrl(svc), { clientId: `presence-app-${process.pid}-${++appSeq}`, username: 'user', password: token })

async function get<T>(path: string): Promise<T> {
  const res = await appFetch(`${svc.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
  if (res.status !== 200) throw new Error(`${path} → ${res.status}`)
  return (await res.json()) as T
}
const detail = (id: string) => get<Detail>(`/api/device/${id}`)
/** Presence events of a device, oldest first. */
const presence = async (id: string) =>
  (await get<{ events: Ev[] }>(`/api/device/${id}/events?limit=100`)).events
    .filter((e) => e.type === 'device.connected' || e.type === 'device.disconnected')
    .reverse()

/** Waits until the device has `n` presence events and returns them. */
const presenceCount = (id: string, n: number) => eventually(async () => ((await presence(id)).length >= n ? presence(id) : null))

/** The retained state a fresh subscriber sees. */
async function retainedState(dev: PairedDevice) {
  const app = await asApp()
  const got = nextMessage<{ online: boolean; since: string | null; reason?: string }>(app, topicFor(dev.deviceId, 'state'))
  await subscribe(app, topicFor(dev.deviceId, 'state'))
  const m = await got
  await close(app)
  return m
}

function closedFlag(c: MqttClient) {
  const flag = { closed: false }
  c.once('close', () => (flag.closed = true))
  return flag
}

function rawConnect(packet: Buffer): Promise<{ socket: Socket; returnCode: number; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(svc.app.mqttPort!, '127.0.0.1')
    const closed = new Promise<void>((r) => socket.once('close', () => r()))
    let buf = Buffer.alloc(0)
    socket.on('error', () => {})
    socket.on('connect', () => socket.write(packet))
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      if (buf.length >= 4) {
        if (buf[0] !== 0x20) reject(new Error(`expected CONNACK, got ${buf[0]}`))
        resolve({ socket, returnCode: buf[3]!, closed })
      }
    })
    socket.once('close', () => reject(new Error('closed before CONNACK')))
  })
}

t.test('connect and clean disconnect', async (t) => {
  const dev = await pairDevice(svc, token)
  const before = await detail(dev.deviceId)
  t.equal(before.isActive, false, 'not active before it connects')

  // An app watching the device sees the state change live.
  const app = await asApp()
  t.teardown(() => app.end(true))
  t.equal(await subscribe(app, topicFor(dev.deviceId, 'state')), 1)
  const online = nextMessage<{ online: boolean; since: string }>(app, topicFor(dev.deviceId, 'state'))

  const c = await asDevice(dev)
  const [connected] = await presenceCount(dev.deviceId, 1)
  t.equal(connected!.type, 'device.connected')
  t.equal(connected!.deviceId, dev.deviceId)
  t.equal(connected!.data.clientId, dev.deviceId)
  t.match(connected!.data.remoteAddress, /127\.0\.0\.1/)
  t.match(
    connected!.data.connectionId,
    new RegExp(`^${svc.config.mqtt.brokerId}~[0-9a-f]{12}/[0-9a-f-]{36}$`),
    'the connection id names this node',
  )
  t.equal(connected!.data.cleanSession, true)
  const on = await online
  t.equal(on.payload.online, true)
  t.ok(Date.parse(on.payload.since) > 0, 'since is a timestamp')
  const d1 = await detail(dev.deviceId)
  t.equal(d1.isActive, true)
  t.ok(d1.last_seen_at && Date.parse(d1.last_seen_at) > 0, 'last_seen_at set')
  const st1 = await retainedState(dev)
  t.equal(st1.retain, true)
  t.equal(st1.payload.online, true)

  const offline = nextMessage<{ online: boolean; since: string; reason: string }>(app, topicFor(dev.deviceId, 'state'))
  await close(c)
  const [, disconnected] = await presenceCount(dev.deviceId, 2)
  t.equal(disconnected!.type, 'device.disconnected')
  t.equal(disconnected!.data.reason, 'client_disconnect')
  t.equal(disconnected!.data.connectionId, connected!.data.connectionId, 'matched on the connection id')
  t.equal(disconnected!.data.clientId, dev.deviceId)
  t.match(disconnected!.data.remoteAddress, /127\.0\.0\.1/)
  const off = await offline
  t.equal(off.payload.online, false)
  t.equal(off.payload.reason, 'client_disconnect')
  const d2 = await eventually(async () => {
    const d = await detail(dev.deviceId)
    return d.isActive ? null : d
  })
  t.equal(d2.isActive, false)
  t.ok(Date.parse(d2.last_seen_at!) >= Date.parse(d1.last_seen_at!), 'last_seen_at moves forward')
  const st2 = await retainedState(dev)
  t.equal(st2.retain, true)
  t.equal(st2.payload.online, false)
})

t.test('keepalive timeout', async (t) => {
  const dev = await pairDevice(svc, token)
  // A client that asks for a 1 s keepalive and then never sends another byte.
  const raw = await rawConnect(connectBytes({ clientId: dev.deviceId, username: dev.deviceId, password: dev.password, keepalive: 1 }))
  t.equal(raw.returnCode, 0, 'CONNACK accepted')
  t.teardown(() => raw.socket.destroy())
  const [connected] = await presenceCount(dev.deviceId, 1)
  t.equal(connected!.type, 'device.connected')
  await raw.closed
  t.pass('the broker closed the silent connection')
  const [, disconnected] = await presenceCount(dev.deviceId, 2)
  t.equal(disconnected!.type, 'device.disconnected')
  t.equal(disconnected!.data.reason, 'keepalive_timeout')
  t.equal(disconnected!.data.connectionId, connected!.data.connectionId)
  await eventually(async () => !(await detail(dev.deviceId)).isActive)
  const st = await retainedState(dev)
  t.equal(st.payload.online, false)
})

t.test('takeover: the same device connecting again closes the old connection', async (t) => {
  const dev = await pairDevice(svc, token)
  const first = await asDevice(dev)
  t.teardown(() => first.end(true))
  const firstClosed = closedFlag(first)
  const [c1] = await presenceCount(dev.deviceId, 1)

  const second = await asDevice(dev)
  t.teardown(() => second.end(true))
  await eventually(async () => firstClosed.closed)
  t.pass('the first connection was closed')
  t.equal(second.connected, true, 'the new one stays')

  const events = await presenceCount(dev.deviceId, 3)
  const connects = events.filter((e) => e.type === 'device.connected')
  const disconnects = events.filter((e) => e.type === 'device.disconnected')
  t.equal(connects.length, 2)
  t.equal(disconnects.length, 1)
  const c2 = connects.find((e) => e.data.connectionId !== c1!.data.connectionId)
  t.ok(c2, 'the second connection has its own id')
  t.equal(disconnects[0]!.data.reason, 'takeover')
  t.equal(disconnects[0]!.data.connectionId, c1!.data.connectionId, 'the disconnect names the old connection')
  t.equal(disconnects[0]!.userId, ownerId, 'and is attributed to the owner, though the device row was not changed')

  t.equal((await detail(dev.deviceId)).isActive, true, 'still active through the new connection')
  const st = await retainedState(dev)
  t.equal(st.payload.online, true, 'still shown online')

  // The new connection is the live one: it gets commands.
  t.equal(await subscribe(second, dev.topics.cmd!), 1)
  const cmd = nextMessage<{ marker: string }>(second, dev.topics.cmd!)
  await svc.app.broker!.publish(dev.deviceId, 'cmd', { marker: 'after-takeover' })
  t.equal((await cmd).payload.marker, 'after-takeover')

  // Its clean disconnect is then the one that takes the device offline.
  await close(second)
  const after = await presenceCount(dev.deviceId, 4)
  t.equal(after[3]!.data.reason, 'client_disconnect')
  t.equal(after[3]!.data.connectionId, c2!.data.connectionId)
  await eventually(async () => !(await detail(dev.deviceId)).isActive)
  t.pass('inactive after the live connection leaves')
})

t.test('a fleet connecting and leaving at once: one event each, attributed, in order', async (t) => {
  const fleet = await Promise.all(Array.from({ length: 40 }, () => pairDevice(svc, token)))
  const clients = await Promise.all(fleet.map((dev) => asDevice(dev)))
  t.teardown(() => clients.forEach((c) => c.end(true)))
  const connected = await Promise.all(fleet.map((dev) => presenceCount(dev.deviceId, 1)))
  for (const [i, events] of connected.entries()) {
    if (events.length !== 1 || events[0]!.userId !== ownerId || events[0]!.data.clientId !== fleet[i]!.deviceId) {
      t.fail(`device ${i}: ${JSON.stringify(events)}`)
    }
  }
  t.pass('every device has exactly its own connect event, with its owner')
  const shown = await Promise.all(fleet.map((dev) => eventually(async () => (await detail(dev.deviceId)).isActive)))
  t.equal(shown.filter(Boolean).length, fleet.length, 'every device is active')

  await Promise.all(clients.map((c) => close(c)))
  const all = await Promise.all(fleet.map((dev) => presenceCount(dev.deviceId, 2)))
  const ordered = all.filter(
    (ev) =>
      ev.length === 2 &&
      ev[0]!.type === 'device.connected' &&
      ev[1]!.type === 'device.disconnected' &&
      ev[1]!.data.reason === 'client_disconnect',
  )
  t.equal(ordered.length, fleet.length, 'each has its connect, then its clean disconnect')
  const offline = await Promise.all(fleet.map((dev) => eventually(async () => !(await detail(dev.deviceId)).isActive)))
  t.equal(offline.filter(Boolean).length, fleet.length, 'every device is inactive again')
  t.ok(new Date(all[0]![1]!.created_at) >= new Date(all[0]![0]!.created_at), 'events carry the time each was seen')
})

t.test('kick through the broker', async (t) => {
  const dev = await pairDevice(svc, token)
  const c = await asDevice(dev)
  t.teardown(() => c.end(true))
  const flag = closedFlag(c)
  const [connected] = await presenceCount(dev.deviceId, 1)
  t.equal(await svc.app.broker!.kick(dev.deviceId), true, 'a live session was kicked')
  await eventually(async () => flag.closed, 1000)
  t.pass('the client saw its connection close')
  const [, disconnected] = await presenceCount(dev.deviceId, 2)
  t.equal(disconnected!.data.reason, 'kicked')
  t.equal(disconnected!.data.connectionId, connected!.data.connectionId)
  await eventually(async () => !(await detail(dev.deviceId)).isActive)
  t.equal((await retainedState(dev)).payload.online, false)
  t.equal(await svc.app.broker!.kick(dev.deviceId), false, 'nothing left to kick')

  // Kicking does not revoke: the device can come back.
  const again = await asDevice(dev)
  t.equal(again.connected, true)
  await close(again)
})

t.test('disconnect over HTTP ends the live session within a second', async (t) => {
  const dev = await pairDevice(svc, token)
  const c = await asDevice(dev)
  t.teardown(() => c.end(true))
  const flag = closedFlag(c)
  const [connected] = await presenceCount(dev.deviceId, 1)

  const res = await appFetch(`${svc.url}/api/device/disconnect`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ deviceId: dev.deviceId }),
  })
  t.equal(res.status, 200)
  const body = (await res.json()) as { success: boolean; kicked: boolean }
  t.equal(body.success, true)
  t.equal(body.kicked, true, 'the response says a session was ended')
  await eventually(async () => flag.closed, 1000)
  t.pass('the client saw its connection close within a second')

  const events = await eventually(async () => {
    const evs = (await get<{ events: Ev[] }>(`/api/device/${dev.deviceId}/events?limit=100`)).events
    return evs.some((e) => e.type === 'device.disconnected') ? evs : null
  })
  const disconnected = events.find((e) => e.type === 'device.disconnected')!
  t.equal(disconnected.data.reason, 'kicked')
  t.equal(disconnected.data.connectionId, connected!.data.connectionId)
  t.ok(
    events.some((e) => e.type === 'device.credentials_revoked'),
    'the revocation is recorded too',
  )
  await eventually(async () => !(await detail(dev.deviceId)).isActive)
  t.equal((await retainedState(dev)).payload.online, false)
})

/** Collects the state messages an app sees for a device, from now on. */
async function watchState(dev: PairedDevice) {
  const app = await asApp()
  const seen: Array<{ online: boolean; reason?: string; retained: boolean }> = []
  app.on('message', (topic, payload, packet) => {
    if (topic === topicFor(dev.deviceId, 'state'))
      seen.push({ ...(JSON.parse(payload.toString('utf8')) as { online: boolean; reason?: string }), retained: packet.retain })
  })
  await subscribe(app, topicFor(dev.deviceId, 'state'))
  return { app, seen }
}

t.test('the service decides what a closed connection means: no "connection lost" will on kick or takeover', async (t) => {
  const dev = await pairDevice(svc, token)
  const first = await asDevice(dev)
  t.teardown(() => first.end(true))
  await presenceCount(dev.deviceId, 1)
  const { app, seen } = await watchState(dev)
  t.teardown(() => app.end(true))
  await eventually(async () => seen.some((s) => s.online))

  // Takeover: the device connects again; watchers never see it offline.
  const second = await asDevice(dev)
  t.teardown(() => second.end(true))
  await presenceCount(dev.deviceId, 3)
  await eventually(async () => seen.filter((s) => s.online && !s.retained).length >= 1 && seen.length >= 2)
  t.same(
    seen.filter((s) => !s.online),
    [],
    'no offline state during the takeover',
  )

  // Kick: the watchers see "kicked", never the broker-set will's "connection_lost".
  t.equal(await svc.app.broker!.kick(dev.deviceId), true)
  await eventually(async () => seen.some((s) => s.reason === 'kicked'))
  t.same(
    seen.filter((s) => s.reason === 'connection_lost'),
    [],
    'the will did not fire',
  )

  // A connection that really drops (no DISCONNECT) does publish the will.
  const third = await asDevice(dev)
  await eventually(async () => (await detail(dev.deviceId)).isActive)
  ;(third as unknown as { stream: { destroy(): void } }).stream.destroy()
  await eventually(async () => seen.some((s) => s.reason === 'connection_lost' || s.reason === 'socket_error'))
  t.pass('a dropped connection is shown offline')
})

/**
 * The restart tests come last and take over the running node (the shared app, then each test's
 * restarted one), instead of starting a node of their own to restart (an app start is about 1.2 s
 * of CPU): the earlier tests' devices are offline by then, and each restart test reads only its
 * own devices or, for the fleet, every device (all offline after a restart either way). The
 * restarted node is registered on the file's root so that the next test can take it over.
 */
const root = t

t.test('a restart after a crash: devices the node still showed connected are recorded offline', async (t) => {
  const node = svc
  const owner = await signUp(makeClient(node.url).client, uniqueEmail('crash'))
  const dev = await pairDevice(node, owner.token)
  const c = await connect(`mqtt://127.0.0.1:${node.app.mqttPort}`, {
    clientId: dev.deviceId,
    username: dev.deviceId,
    password: dev.password,
  })
  await eventually(async () => {
    const res = await appFetch(`${node.url}/api/device/${dev.deviceId}`, { headers: { authorization: `Bearer ${owner.token}` } })
    return ((await res.json()) as Detail).isActive
  })
  const db = node.app.database.db
  const { device: deviceTable } = await import('../../src/devices/tables.js')
  const { eq } = await import('drizzle-orm')
  const [live] = await db.select().from(deviceTable).where(eq(deviceTable.id, dev.deviceId))
  t.match(live?.connectionId, new RegExp(`^${node.config.mqtt.brokerId}~[0-9a-f]{12}/`), 'the row names the live connection on this node')
  c.end(true)
  const reuse = { dataDir: node.dataDir, databaseUrl: node.config.databaseUrl, redisPrefix: node.config.redisPrefix }
  await node.close()
  // What a crash leaves behind: the row still says connected through this node.
  const { openDatabase } = await import('../../src/db/client.js')
  const raw = openDatabase({ databaseUrl: node.config.databaseUrl, dataDir: node.dataDir })
  await raw.db
    .update(deviceTable)
    .set({ isActive: true, connectionId: `${node.config.mqtt.brokerId}/crashed-run` })
    .where(eq(deviceTable.id, dev.deviceId))
  // A fleet too: more disconnects than one statement's 65,535 parameters can carry (7 per event).
  const { sql } = await import('drizzle-orm')
  const FLEET = 10_000
  await raw.db.execute(sql`
    insert into device (id, name, user_id, pin_code, display, is_active, connection_id)
    select 'crashed-' || g, 'fleet ' || g, d.user_id, d.pin_code, d.display, true, ${node.config.mqtt.brokerId} || '/run-' || g
    from device d, generate_series(1, ${FLEET}) g where d.id = ${dev.deviceId}`)
  await raw.close()

  const restarted = await startApp(root, { reuse, env: { DEVICE_POLL_INTERVAL: '0' } })
  svc = restarted
  t.equal(restarted.config.mqtt.brokerId, node.config.mqtt.brokerId, 'the same node id (kept in DATA_DIR)')
  const [row] = await restarted.app.database.db.select().from(deviceTable).where(eq(deviceTable.id, dev.deviceId))
  t.equal(row?.isActive, false, 'recorded offline before the node accepts connections')
  t.equal(row?.connectionId, null)
  const res = await appFetch(`${restarted.url}/api/device/${dev.deviceId}/events?limit=5`, {
    headers: { authorization: `Bearer ${owner.token}` },
  })
  const [latest] = ((await res.json()) as { events: Ev[] }).events
  t.equal(latest?.type, 'device.disconnected')
  t.equal(latest?.data.reason, 'server_shutdown')
  t.equal(latest?.data.clean, false, 'marked as not a clean shutdown')
  const [fleet] = await restarted.app.database.db
    .select({
      active: sql<number>`count(*) filter (where ${deviceTable.isActive})::int`,
      held: sql<number>`count(${deviceTable.connectionId})::int`,
    })
    .from(deviceTable)
  t.same(fleet, { active: 0, held: 0 }, `all ${FLEET + 1} devices are offline`)
  const { event: eventTable } = await import('../../src/events/tables.js')
  const [recorded] = await restarted.app.database.db
    .select({ n: sql<number>`count(*)::int` })
    .from(eventTable)
    .where(
      sql`${eventTable.type} = 'device.disconnected' and ${eventTable.data}->>'reason' = 'server_shutdown' and ${eventTable.deviceId} like 'crashed-%'`,
    )
  t.equal(recorded?.n, FLEET, 'each with its disconnect recorded')
})

t.test('a new session after the broker lost the old one gets the commands it never acknowledged', async (t) => {
  const node = svc
  const owner = await signUp(makeClient(node.url).client, uniqueEmail('catch-up'))
  const dev = await pairDevice(node, owner.token)
  const url = () => `mqtt://127.0.0.1:${node.app.mqttPort}`
  const persistent = { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false }
  const send = async (svcUrl: string, command: string) => {
    const res = await appFetch(`${svcUrl}/api/device/${dev.deviceId}/command`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command }),
    })
    return ((await res.json()) as { commandId: string }).commandId
  }
  // The device's first session: it subscribes, acknowledges one command, then goes away.
  const first = await connect(url(), persistent)
  await subscribe(first, dev.topics.cmd!)
  // Listening before the request: the command can reach the device before the 202 reaches us.
  const arriving = nextMessage<{ commandId: string }>(first, dev.topics.cmd!)
  const acked = await send(node.url, 'identify')
  const got = await arriving
  t.equal(got.payload.commandId, acked)
  await new Promise<void>((resolve, reject) =>
    first.publish(dev.topics.ack!, JSON.stringify({ commandId: acked, ok: true }), { qos: 1 }, (e) => (e ? reject(e) : resolve())),
  )
  await close(first)
  // The service restarts (the embedded broker keeps sessions in memory), and a command is sent before the device is back.
  const reuse = { dataDir: node.dataDir, databaseUrl: node.config.databaseUrl, redisPrefix: node.config.redisPrefix }
  await node.close()
  const again = await startApp(root, { reuse, env: { DEVICE_POLL_INTERVAL: '0' } })
  svc = again
  const missed = await send(again.url, 'refresh')
  const back = await connect(`mqtt://127.0.0.1:${again.app.mqttPort}`, persistent)
  t.teardown(() => back.end(true))
  const seen: string[] = []
  back.on('message', (topic, payload) => {
    if (topic === dev.topics.cmd) seen.push((JSON.parse(payload.toString('utf8')) as { commandId: string }).commandId)
  })
  await subscribe(back, dev.topics.cmd!)
  await eventually(async () => seen.includes(missed))
  t.pass('the command sent while it was away arrives on the new session')
  t.notOk(seen.includes(acked), 'the acknowledged one is not sent again')
})
