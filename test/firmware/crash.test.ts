// Firmware rollouts across kill -9 of the service (issue 29.3 and 29.4): an offer is recorded
// exactly when its message is queued, and a failure report is recorded with the halt it causes.
// Each test kills the real service process twice: once where the kill happens to land, and once
// leaving what a kill in the worst place leaves on a version that wrote these in two steps
// (written into the database while the service is down, as test/schedules/crash.test.ts does), which
// the restarted service must finish: every frame, online or asleep, gets the offer or its
// withdrawal, and a rollout whose recorded failures cross its threshold is halted.
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import mqtt, { type MqttClient } from 'mqtt'
import { openDatabase } from '../../src/db/client.js'
import { signUpAdmin } from '../helpers/admin.js'
import { freePort, type TestApp } from '../helpers/app.js'
import { childBacking, type ServiceProcess, startServiceProcess } from '../helpers/child.js'
import { makeClient, signUp } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, eventually } from '../helpers/mqtt.js'
import { api, enroll, upload } from './helpers.js'

type Tap = Parameters<typeof childBacking>[0]
type Offer = { seq: number; version: string | null; releaseId?: string }

async function service(t: Tap & { teardown(fn: () => unknown): void }) {
  const dataDir = await mkdtemp(join(tmpdir(), 'dps-fw-crash-'))
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
  const svc = { url, dataDir } as TestApp
  let proc: ServiceProcess = startServiceProcess(t, env)
  await proc.waitFor(/public URL/)
  return {
    svc,
    mqttUrl: `mqtt://127.0.0.1:${mqttPort}`,
    kill: async () => {
      proc.child.kill('SIGKILL')
      await proc.closed
    },
    start: async () => {
      proc = startServiceProcess(t, env)
      await proc.waitFor(/public URL/)
    },
    /** Runs `fn` on the database while the service is down. */
    withDatabase: async (fn: (db: ReturnType<typeof openDatabase>['db']) => Promise<unknown>) => {
      const database = openDatabase({ databaseUrl: backing.DATABASE_URL, dataDir })
      try {
        await fn(database.db)
      } finally {
        await database.close()
      }
    },
  }
}

/** A frame that keeps its session (clean: false) and subscribes to its offer topic on every new session. */
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

const newest = (offers: Offer[]) => offers.reduce<Offer | undefined>((a, o) => (!a || o.seq > a.seq ? o : a), undefined)

async function people(svc: TestApp) {
  const { token: admin } = await signUpAdmin(svc, 'fw-admin@example.com')
  const { token: owner } = await signUp(makeClient(svc.url).client, 'fw-owner@example.com')
  return { admin, owner }
}

t.test('every frame, online or asleep, gets the offer of a rollout whose PUT a kill -9 cut or followed', async (t) => {
  const s = await service(t)
  const { admin, owner } = await people(s.svc)
  const devices: PairedDevice[] = []
  for (let i = 0; i < 6; i++) devices.push(await pairDevice(s.svc, owner, { name: `Frame ${i}` }))
  await enroll(
    s.svc,
    admin,
    devices.map((d) => d.deviceId),
  )
  const offers = new Map(devices.map((d) => [d.deviceId, [] as Offer[]]))
  const clients: MqttClient[] = []
  t.teardown(() => Promise.all(clients.map((c) => close(c).catch(() => {}))))
  // Half stay online (and reconnect by themselves); half took their session once and sleep.
  const awake = devices.slice(0, 3)
  const asleep = devices.slice(3)
  for (const d of awake) clients.push(await frame(s.mqttUrl, d, offers.get(d.deviceId)!, true))
  for (const d of asleep) await close(await frame(s.mqttUrl, d, [], false))
  const wake = async () => {
    for (const d of asleep) clients.push(await frame(s.mqttUrl, d, offers.get(d.deviceId)!, false))
  }
  const everyFrameHas = (version: string) =>
    eventually(async () => devices.every((d) => newest(offers.get(d.deviceId)!)?.version === version), 30_000)

  // 1. Killed wherever it lands while the PUT runs; the PUT is retried after the restart.
  t.equal((await upload(s.svc, admin, { model: 'test-frame', version: '1.1.0' })).status, 201)
  const put = api(s.svc, admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', { version: '1.1.0', percent: 100 }).catch(
    () => null,
  )
  await new Promise((r) => setTimeout(r, 20))
  await s.kill()
  await put
  await s.start()
  const retried = await api(s.svc, admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', { version: '1.1.0', percent: 100 })
  t.equal(retried.status, 200)
  const counts = (await api(s.svc, admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0].counts
  t.equal(counts.offered, devices.length, `every device offered, ${retried.body.offeredNow} of them by the retried PUT`)
  await wake()
  await everyFrameHas('1.1.0')
  t.pass('every frame got 1.1.0 after a kill during the PUT')
  for (const c of clients.splice(3)) await close(c)

  // 2. What a kill between recording the offers and queueing their messages left: offers
  // recorded, no message queued. The restarted service queues them.
  t.equal((await upload(s.svc, admin, { model: 'test-frame', version: '1.2.0' })).status, 201)
  const second = await api(s.svc, admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', { version: '1.2.0', percent: 100 })
  t.equal(second.body.offeredNow, devices.length)
  await s.kill()
  await s.withDatabase((db) => db.execute(sql`delete from device_message where kind = 'ota' and payload->>'version' = '1.2.0'`))
  await s.start()
  await wake()
  await everyFrameHas('1.2.0')
  t.pass('every frame got 1.2.0, whose offers were recorded and not queued when the service died')
  const view = (await api(s.svc, admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0]
  t.match(view, { version: '1.2.0', counts: { offered: devices.length, pending: devices.length } })
})

t.test('failures recorded before a kill -9 halt the rollout once the service is back', async (t) => {
  const s = await service(t)
  const { admin, owner } = await people(s.svc)
  const devices: PairedDevice[] = []
  for (let i = 0; i < 6; i++) devices.push(await pairDevice(s.svc, owner, { name: `Frame ${i}` }))
  await enroll(
    s.svc,
    admin,
    devices.map((d) => d.deviceId),
  )
  const offers = new Map(devices.map((d) => [d.deviceId, [] as Offer[]]))
  const clients: MqttClient[] = []
  t.teardown(() => Promise.all(clients.map((c) => close(c).catch(() => {}))))
  for (const d of devices) clients.push(await frame(s.mqttUrl, d, offers.get(d.deviceId)!, false))
  t.equal((await upload(s.svc, admin, { model: 'test-frame', version: '1.1.0' })).status, 201)
  const put = await api(s.svc, admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', {
    version: '1.1.0',
    percent: 100,
    minAttempts: 2,
    maxFailureShare: 0.5,
  })
  t.equal(put.body.offeredNow, devices.length)
  await eventually(async () => devices.every((d) => newest(offers.get(d.deviceId)!)?.version === '1.1.0'))
  const report = (c: MqttClient, d: PairedDevice) =>
    new Promise<void>((resolve, reject) =>
      c.publish(d.topics.otaProgress!, JSON.stringify({ version: '1.1.0', state: 'failed', reason: 'flash' }), { qos: 1 }, (err) =>
        err ? reject(err) : resolve(),
      ),
    )
  const rollout = async () => (await api(s.svc, admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0]

  // 1. Killed right after the report that crosses the threshold was acknowledged: a report is
  // acknowledged once stored (docs/mqtt.md), so both failures are kept, and the halt with them.
  await report(clients[0]!, devices[0]!)
  await report(clients[1]!, devices[1]!)
  await s.kill()
  await Promise.all(clients.splice(0).map((c) => close(c).catch(() => {})))
  await s.start()
  const after = await rollout()
  t.equal(after.counts.failed, 2, 'both acknowledged failures recorded')
  t.ok(after.haltedAt, 'and the halt with them')

  // 2. What a kill between recording the failures and halting left on a version that did these
  // in two steps: the failures, no halt. The restarted service halts the rollout and withdraws
  // the offers not taken up; a frame asleep through all of it gets the withdrawal.
  const failing = devices.slice(2, 4).map((d) => d.deviceId)
  await s.kill()
  await s.withDatabase(async (db) => {
    await db.execute(sql`update firmware_rollout set halted_at = null, counting_since = now() - interval '1 minute'`)
    await db.execute(sql`update device_firmware set state = 'offered' where state = 'withdrawn'`)
    await db.execute(sql`delete from device_message where kind = 'ota' and payload->>'version' is null`)
    await db.execute(
      sql`update device_firmware set state = 'failed', reason = 'flash', updated_at = now() where device_id in (${sql.join(
        failing.map((id) => sql`${id}`),
        sql`, `,
      )})`,
    )
  })
  await s.start()
  const halted = await rollout()
  t.ok(halted.haltedAt, 'halted at start')
  t.equal(halted.counts.withdrawn, devices.length - halted.counts.failed, 'every offer not taken up withdrawn')
  const sleeper = devices[5]!
  const got: Offer[] = []
  clients.push(await frame(s.mqttUrl, sleeper, got, false))
  await eventually(async () => newest(got)?.version === null)
  t.pass('the frame that slept through it got the withdrawal')
})
