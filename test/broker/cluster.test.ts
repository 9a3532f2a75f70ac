// Two service instances sharing one Redis (and one database): a device on instance A receives
// what instance B publishes, reconnecting to B gets what queued while it was away from A, and
// a disconnect through B ends the session held by A.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
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
