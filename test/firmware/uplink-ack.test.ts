// A device's QoS 1 uplink is acknowledged (PUBACK) only once the service has stored it: MQTT's
// at-least-once, where the device forgets a message at its PUBACK. Against the real service
// process, killed (SIGKILL) the moment the device gets the PUBACK of an up/ota failure report:
// after the restart the report is recorded, with the rollout halt it causes. Before, the broker
// acknowledged on arrival and stored afterwards, and the report died with the process.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import postgres from 'postgres'
import { signUpAdmin } from '../helpers/admin.js'
import { freePort, type TestApp } from '../helpers/app.js'
import { childBacking, type ServiceProcess, startServiceProcess } from '../helpers/child.js'
import { makeClient, signUp } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, eventually } from '../helpers/mqtt.js'
import { api, enroll, upload } from './helpers.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Offer = { seq: number; version: string | null }

async function service(t: Test) {
  const dataDir = await mkdtemp(join(tmpdir(), 'dps-uplink-ack-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const mqttPort = await freePort()
  const url = `http://127.0.0.1:${port}`
  const backing = await childBacking(t, dataDir)
  const env = {
    ...backing,
    DATA_DIR: dataDir,
    PORT: String(port),
    BASE_URL: url,
    MQTT_PORT: String(mqttPort),
    ADMIN_EMAILS: 'fw-admin@example.com',
    DEVICE_POLL_INTERVAL: '0',
    RATE_LIMIT_MAX: '100000',
    RATE_LIMIT_AUTH_MAX: '100000',
    MQTT_CONNECT_RATE: '1000',
  }
  let proc: ServiceProcess = startServiceProcess(t, env)
  await proc.waitFor(/public URL/)
  return {
    svc: { url, dataDir } as TestApp,
    databaseUrl: backing.DATABASE_URL,
    mqttUrl: `mqtt://127.0.0.1:${mqttPort}`,
    /** SIGKILL now, synchronously (from a PUBACK callback: nothing else runs in between). */
    killNow: () => proc.child.kill('SIGKILL'),
    closed: () => proc.closed,
    start: async () => {
      proc = startServiceProcess(t, env)
      await proc.waitFor(/public URL/)
    },
  }
}

/** A frame with a persistent session that subscribes to its offers on every new session. */
function frame(url: string, dev: PairedDevice, offers: Offer[], reconnect: boolean): Promise<MqttClient> {
  const client = mqtt.connect(url, {
    clientId: dev.clientId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
    reconnectPeriod: reconnect ? 200 : 0,
    protocolVersion: 4,
  })
  client.on('connect', (ack) => {
    if (!ack.sessionPresent) client.subscribe(dev.topics.ota!, { qos: 1 })
  })
  client.on('message', (topic, payload) => {
    if (topic === dev.topics.ota) offers.push(JSON.parse(payload.toString('utf8')))
  })
  client.on('error', () => {})
  return new Promise((resolve) => client.once('connect', () => resolve(client)))
}

const failure = JSON.stringify({ version: '1.1.0', state: 'failed', reason: 'flash' })

/** Two frames offered 1.1.0 by a rollout that halts at two failures of two. */
async function rolloutOfTwo(t: Test, reconnect: boolean) {
  const s = await service(t)
  const { token: admin } = await signUpAdmin(s.svc, 'fw-admin@example.com')
  const { token: owner } = await signUp(makeClient(s.svc.url).client, 'fw-owner@example.com')
  const devices = [await pairDevice(s.svc, owner, { name: 'Frame 0' }), await pairDevice(s.svc, owner, { name: 'Frame 1' })]
  await enroll(
    s.svc,
    admin,
    devices.map((d) => d.deviceId),
  )
  const offers = devices.map(() => [] as Offer[])
  const clients: MqttClient[] = []
  t.teardown(() => Promise.all(clients.map((c) => close(c).catch(() => {}))))
  for (const [i, d] of devices.entries()) clients.push(await frame(s.mqttUrl, d, offers[i]!, reconnect))
  t.equal((await upload(s.svc, admin, { model: 'test-frame', version: '1.1.0' })).status, 201)
  const put = await api(s.svc, admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', {
    version: '1.1.0',
    percent: 100,
    minAttempts: 2,
    maxFailureShare: 0.5,
  })
  t.equal(put.body.offeredNow, devices.length)
  await eventually(async () => offers.every((o) => o.some((x) => x.version === '1.1.0')))
  // The first failure, acknowledged and left to be stored: one of two, no halt yet.
  await clients[0]!.publishAsync(devices[0]!.topics.otaProgress!, failure, { qos: 1 })
  const rollout = async () => (await api(s.svc, admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0]
  return { s, devices, clients, rollout }
}

t.test('a failure report whose PUBACK the device got survives a kill -9 at that moment, with its halt', async (t) => {
  const { s, devices, clients, rollout } = await rolloutOfTwo(t, false)
  const [c, d] = [clients[1]!, devices[1]!]
  // A full log batch first, in the same device's queue: storing it takes a while, so a broker that
  // acknowledged on arrival would have the report's PUBACK out long before the report is stored.
  const entries = Array.from({ length: 100 }, (_, i) => ({
    level: 'info',
    message: `boot step ${i} `.repeat(20),
    fields: { step: i, note: 'x'.repeat(100) },
  }))
  c.publish(d.topics.log!, JSON.stringify(entries), { qos: 1 })
  const acked = new Promise<void>((resolve, reject) =>
    c.publish(d.topics.otaProgress!, failure, { qos: 1 }, (err) => {
      if (err) return reject(err)
      s.killNow()
      resolve()
    }),
  )
  await acked
  await s.closed()
  await Promise.all(clients.splice(0).map((x) => close(x).catch(() => {})))
  await s.start()
  const after = await rollout()
  t.equal(after.counts.failed, 2, 'the report acknowledged before the kill is recorded')
  t.ok(after.haltedAt, 'and the halt it caused')
})

t.test(
  'no PUBACK while the report cannot be stored; killed unacknowledged, it is sent again and recorded',
  {
    skip: process.env.DATABASE_URL
      ? false
      : 'PostgreSQL only (the PostgreSQL pass of .ci/run runs it): a second connection holds the rollout row',
  },
  async (t) => {
    const { s, devices, clients, rollout } = await rolloutOfTwo(t, true)
    const [c, d] = [clients[1]!, devices[1]!]
    // Wait for the first report's store, then hold the rollout row the second report's
    // transaction locks, from a connection of the test's own.
    await eventually(async () => (await rollout()).counts.failed === 1)
    const admin = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} })
    t.teardown(() => admin.end({ timeout: 1 }))
    let release!: () => void
    let locked!: () => void
    const isLocked = new Promise<void>((resolve) => (locked = resolve))
    const held = admin.begin(async (tx) => {
      await tx`select 1 from firmware_rollout for update`
      locked()
      await new Promise<void>((resolve) => (release = resolve))
    })
    await isLocked
    let acked = false
    c.publish(d.topics.otaProgress!, failure, { qos: 1 }, (err) => {
      if (!err) acked = true
    })
    await new Promise((r) => setTimeout(r, 1500))
    t.equal(acked, false, 'no PUBACK while the report waits on the lock')
    // Killed with the report unstored and unacknowledged; the device still holds it.
    s.killNow()
    await s.closed()
    release()
    await held
    await s.start()
    // The frame reconnects by itself and sends the report again (DUP).
    await eventually(async () => acked, 30_000)
    t.pass('acknowledged once the restarted service stored it')
    const after = await rollout()
    t.equal(after.counts.failed, 2, 'the report is recorded')
    t.ok(after.haltedAt, 'and the rollout halted')
  },
)
