// A cluster node dies (SIGKILL of its process): the surviving node notices within a bounded time
// (three heartbeats), records the devices it held offline with one disconnect event each, a
// device that fails over to the survivor gets exactly one disconnect event for its old
// connection, and nothing but the broker's own device wills is published on the dead node's
// behalf: a companion app could not set a will there in the first place.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PublishPacket } from 'aedes'
import type { MqttClient } from 'mqtt'
import { freePort, freshPostgres, startApp } from '../helpers/app.js'
import { startServiceProcess } from '../helpers/child.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { postgresUrl, redisUrl } from '../helpers/services.js'
import { appFetch } from '../helpers/app-fetch.js'

const redis = await redisUrl()
const postgres = await postgresUrl()
const skip = !redis
  ? 'no Redis reachable (set REDIS_URL)'
  : !postgres
    ? 'no PostgreSQL reachable (set DATABASE_URL): cluster nodes share one database'
    : false

type EventRecord = { type: string; data: Record<string, unknown> }

async function tempDataDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dps-node-loss-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

t.test('a node that dies: its devices go offline on the survivor, once, and no foreign will is published', { skip }, async (t) => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const databaseUrl = await freshPostgres(t, postgres as string)
  const shared = {
    REDIS_URL: redis as string,
    REDIS_PREFIX: prefix,
    DATABASE_URL: databaseUrl,
    AUTH_SECRET: randomBytes(32).toString('base64url'),
    DEVICE_POLL_INTERVAL: '0',
    MQTT_HEARTBEAT_MS: '300',
  }
  // One data folder stands for the shared volume their object store must be on.
  const dataDir = await tempDataDir(t)
  const b = await startApp(t, { env: { ...shared, MQTT_BROKER_ID: 'node-b' }, reuse: { dataDir, databaseUrl, redisPrefix: prefix } })
  const aMqtt = await freePort()
  const a = startServiceProcess(t, {
    ...shared,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    MQTT_PORT: String(aMqtt),
    MQTT_BROKER_ID: 'node-a',
    LOG_LEVEL: 'info',
  })
  await a.waitFor(/public URL/)
  const onA = `mqtt://127.0.0.1:${aMqtt}`

  const { token } = await signUp(makeClient(b.url).client, uniqueEmail('node-loss'))
  const api = async <T>(path: string) =>
    (await (await appFetch(`${b.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).json()) as T
  const events = async (id: string) => (await api<{ events: EventRecord[] }>(`/api/device/${id}/events?limit=50`)).events
  const active = async (id: string) => (await api<{ isActive: boolean }>(`/api/device/${id}`)).isActive
  const [stays, movesOver, bystander] = [await pairDevice(b, token), await pairDevice(b, token), await pairDevice(b, token)]
  const asDevice = (dev: PairedDevice, url: string) =>
    connect(url, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })

  // Watchers on the survivor: the owner's app on one device's state, a device on the fleet topic.
  const watcher = await connect(mqttUrl(b), {
    clientId: `app-${randomBytes(4).toString('hex')}`,
    username: 'user',
    password: token,
    clean: true,
  })
  t.teardown(() => watcher.end(true))
  await subscribe(watcher, `devices/${stays.deviceId}/state`)
  const fleetSeen: string[] = []
  const fleet: MqttClient = await asDevice(bystander, mqttUrl(b))
  t.teardown(() => fleet.end(true))
  fleet.on('message', (topic, payload) => fleetSeen.push(`${topic} ${payload.toString('utf8')}`))
  await subscribe(fleet, 'fleet/cmd')

  // On the node that will die: two devices, and an app that tries to leave a will on fleet/cmd.
  const held = [await asDevice(stays, onA), await asDevice(movesOver, onA)]
  for (const c of held) c.on('error', () => {})
  const refused = await connect(onA, {
    clientId: `app-${randomBytes(4).toString('hex')}`,
    username: 'user',
    password: token,
    clean: true,
    will: { topic: 'fleet/cmd', payload: Buffer.from('{"command":"reboot"}'), qos: 1, retain: false },
  }).then(
    (c) => {
      c.end(true)
      return undefined
    },
    (err: Error & { code?: number }) => err,
  )
  t.equal(refused?.code, 5, 'an app may not set a will: CONNACK 5 (not authorized)')
  await eventually(async () => (await active(stays.deviceId)) && (await active(movesOver.deviceId)))
  const connectionOf = async (id: string) => String((await events(id)).find((e) => e.type === 'device.connected')?.data.connectionId)
  const [staysConn, movesConn] = [await connectionOf(stays.deviceId), await connectionOf(movesOver.deviceId)]
  t.match(staysConn, /^node-a~[0-9a-f]{12}\//, 'held by node A')

  const offline = new Promise<Record<string, unknown>>((resolve) =>
    watcher.on('message', (_topic, payload) => {
      const state = JSON.parse(payload.toString('utf8')) as Record<string, unknown>
      if (state.online === false) resolve(state)
    }),
  )
  a.child.kill('SIGKILL')
  await a.exited
  // One device fails over at once, as a device behind a load balancer would.
  const moved = await asDevice(movesOver, mqttUrl(b))
  t.teardown(() => moved.end(true))

  const lost = await eventually(
    async () => (await events(stays.deviceId)).find((e) => e.type === 'device.disconnected' && e.data.connectionId === staysConn),
    20_000,
  )
  t.equal(lost.data.reason, 'node_lost', 'the survivor recorded the end of the dead node’s connection')
  t.equal(await active(stays.deviceId), false, 'and shows the device offline')
  t.equal((await offline).online, false, 'watchers see it offline')
  await eventually(
    async () => (await events(movesOver.deviceId)).some((e) => e.type === 'device.disconnected' && e.data.connectionId === movesConn),
    20_000,
  )
  // Both the survivor's takeover and its dead-node sweep may see that connection: one event.
  const ends = (await events(movesOver.deviceId)).filter((e) => e.type === 'device.disconnected' && e.data.connectionId === movesConn)
  t.equal(ends.length, 1, 'the device that moved over has exactly one disconnect for its old connection')
  t.equal(await active(movesOver.deviceId), true, 'and is online through the survivor')

  // Whatever the dead node's stored wills held, the survivor publishes only device wills.
  const aedes = b.app.broker!.aedes
  const check = (fields: Partial<PublishPacket>) => {
    const packet = { cmd: 'publish', qos: 1, dup: false, retain: false, ...fields } as PublishPacket
    // The hook redirects a refused publish to a topic nobody can subscribe to.
    return new Promise<string>((resolve) => aedes.authorizePublish(null as never, packet, () => resolve(packet.topic)))
  }
  const foreign = { topic: 'fleet/cmd', payload: Buffer.from('{"command":"reboot"}') }
  t.equal(await check(foreign), '$drop/refused', 'a client-less publish that is not a device will is dropped')
  const will = {
    topic: `devices/${stays.deviceId}/state`,
    retain: true,
    payload: Buffer.from(JSON.stringify({ online: false, since: null, reason: 'connection_lost' })),
  }
  t.equal(await check(will), `devices/${stays.deviceId}/state`, 'a device will goes out')
  // Nothing reached the fleet topic: the first thing there is what the service sends now.
  await new Promise<void>((resolve, reject) =>
    aedes.publish(
      { cmd: 'publish', topic: 'fleet/cmd', payload: Buffer.from('marker'), qos: 1, retain: false, dup: false } as PublishPacket,
      (err) => (err ? reject(err) : resolve()),
    ),
  )
  await eventually(async () => fleetSeen.length > 0)
  t.same(fleetSeen, ['fleet/cmd marker'], 'no will of the dead node reached a device')
  await close(watcher)
})
