// Two service instances sharing one Redis (and one database): a device on instance A receives
// what instance B publishes, reconnecting to B gets what queued while it was away from A, and
// a disconnect through B ends the session held by A.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { redisUrl } from '../helpers/services.js'

const redis = await redisUrl()

t.test('two instances on one Redis', { skip: redis ? false : 'no Redis reachable (set REDIS_URL)' }, async (t) => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const env = { REDIS_URL: redis as string, REDIS_PREFIX: prefix, DEVICE_POLL_INTERVAL: '0', MQTT_BROKER_ID: 'node-a' }
  const a: TestApp = await startApp(t, { env })
  const b: TestApp = await startApp(t, {
    env: { ...env, MQTT_BROKER_ID: 'node-b' },
    // Two PGlite instances cannot share one folder: without PostgreSQL, B has its own database.
    reuse: a.config.databaseUrl ? { dataDir: a.dataDir, databaseUrl: a.config.databaseUrl, redisPrefix: prefix } : undefined,
  })
  const { client } = makeClient(a.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(a, token)

  const onA = await connect(mqttUrl(a), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  await subscribe(onA, `devices/${dev.deviceId}/cmd`)

  const first = nextMessage<{ n: number }>(onA, `devices/${dev.deviceId}/cmd`)
  await b.app.deviceLink.publish(dev.deviceId, 'cmd', { n: 1 })
  t.equal((await first).payload.n, 1, 'published on B, delivered on A')

  await close(onA)
  await b.app.deviceLink.publish(dev.deviceId, 'cmd', { n: 2 })

  // Reconnect to B; the device row lives in A's database when B runs on its own PGlite, so B can
  // only authenticate it when both share PostgreSQL.
  if (a.config.databaseUrl) {
    const onB = await connect(mqttUrl(b), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
    const queued = await nextMessage<{ n: number }>(onB, `devices/${dev.deviceId}/cmd`)
    t.equal(queued.payload.n, 2, 'what queued while offline arrives on the other instance')

    const closed = new Promise<void>((resolve) => onB.once('close', () => resolve()))
    const res = await fetch(`${a.url}/api/device/disconnect`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ deviceId: dev.deviceId }),
    })
    t.equal(res.status, 200)
    await closed
    t.pass('a disconnect through A ended the session held by B')
    onB.end(true)
  } else {
    const onA2 = await connect(mqttUrl(a), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
    const queued = await nextMessage<{ n: number }>(onA2, `devices/${dev.deviceId}/cmd`)
    t.equal(queued.payload.n, 2, 'what B published while the device was offline waited in the shared queue')
    await close(onA2)
  }
})

t.test('a takeover across instances and the shared offline queue cap', { skip: redis ? false : 'no Redis reachable (set REDIS_URL)' }, async (t) => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const env = { REDIS_URL: redis as string, REDIS_PREFIX: prefix, DEVICE_POLL_INTERVAL: '0', MQTT_OFFLINE_QUEUE_LIMIT: '3' }
  const a: TestApp = await startApp(t, { env: { ...env, MQTT_BROKER_ID: 'node-a' } })
  const shared = Boolean(a.config.databaseUrl)
  const b: TestApp = await startApp(t, {
    env: { ...env, MQTT_BROKER_ID: 'node-b' },
    reuse: shared ? { dataDir: a.dataDir, databaseUrl: a.config.databaseUrl, redisPrefix: prefix } : undefined,
  })
  const { token } = await signUp(makeClient(a.url).client, uniqueEmail())
  const dev = await pairDevice(a, token)
  const creds = { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false }
  const events = async () =>
    ((await (await fetch(`${a.url}/api/device/${dev.deviceId}/events?limit=50`, { headers: { authorization: `Bearer ${token}` } })).json()) as { events: Array<{ type: string; data: Record<string, unknown> }> }).events
  const detail = async () => (await (await fetch(`${a.url}/api/device/${dev.deviceId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { isActive: boolean }

  // The offline queue is capped across the cluster: the stored queue itself is counted.
  const first = await connect(mqttUrl(a), creds)
  await subscribe(first, `devices/${dev.deviceId}/cmd`)
  await close(first)
  for (let n = 1; n <= 5; n++) await b.app.deviceLink.publish(dev.deviceId, 'cmd', { n })
  t.equal(b.app.broker!.stats.droppedOffline, 2, 'two of five were dropped on B: the device was offline with 3 queued')
  const again = await connect(mqttUrl(a), creds)
  const got: number[] = []
  again.on('message', (_topic, payload) => got.push((JSON.parse(payload.toString('utf8')) as { n: number }).n))
  await eventually(async () => got.length >= 3)
  await new Promise((r) => setTimeout(r, 200))
  t.same(got, [1, 2, 3], 'the first three arrive, the rest were refused rather than stored')

  if (!shared) return
  // Takeover: the device, connected to A, connects to B. Its old connection is a takeover, and it stays online.
  await eventually(async () => (await detail()).isActive)
  const closedOnA = new Promise<void>((resolve) => again.once('close', () => resolve()))
  const onB = await connect(mqttUrl(b), creds)
  t.teardown(() => onB.end(true))
  await closedOnA
  t.pass('A closed the old connection')
  const disconnect = await eventually(async () => (await events()).find((e) => e.type === 'device.disconnected' && e.data.connectionId && String(e.data.connectionId).startsWith('node-a/') && e.data.reason !== 'client_disconnect'))
  t.equal(disconnect.data.reason, 'takeover', 'recorded as a takeover, not a socket error')
  await new Promise((r) => setTimeout(r, 300))
  t.equal((await detail()).isActive, true, 'the device stays active through B')
})
