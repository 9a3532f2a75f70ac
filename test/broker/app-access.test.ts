// Companion apps on MQTT: what they may watch is decided in batches (one query for a SUBSCRIBE
// of hundreds of filters, or for many apps subscribing at once), each filter gets its own return
// code, and an app whose session is revoked loses its live connection.
import t from 'tap'
import { randomBytes, randomUUID } from 'node:crypto'
import type { MqttClient } from 'mqtt'
import { batchedAccessCheck } from '../../src/mqtt/credentials.js'
import type { Database } from '../../src/db/client.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { connect, eventually, mqttUrl, subackCodes } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
const owner = await signUp(makeClient(svc.url).client, uniqueEmail('app-owner'))
const stranger = await signUp(makeClient(svc.url).client, uniqueEmail('app-stranger'))
const mine = await pairDevice(svc, owner.token)
const theirs = await pairDevice(svc, stranger.token)

const asApp = (token: string) =>
  connect(mqttUrl(svc), { clientId: `app-${randomBytes(6).toString('hex')}`, username: 'user', password: token, clean: true })

const subscribeMany = (client: MqttClient, filters: string[]) => subackCodes(client, filters)

t.test('concurrent access checks share one query per batch', async (t) => {
  let queries = 0
  const db = svc.app.database.db
  const counting = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'execute') {
        return (...args: Parameters<Database['execute']>) => {
          queries += 1
          return target.execute(...args)
        }
      }
      return Reflect.get(target, prop, receiver)
    },
  }) as Database
  const canSee = batchedAccessCheck(counting)
  const random = Array.from({ length: 998 }, () => randomUUID())
  const results = await Promise.all([
    canSee(owner.userId, mine.deviceId),
    canSee(owner.userId, theirs.deviceId),
    ...random.map((id) => canSee(owner.userId, id)),
  ])
  t.same(results.slice(0, 2), [true, false], 'its own device yes, another account’s no')
  t.equal(results.filter(Boolean).length, 1, 'none of 998 unknown devices')
  t.ok(queries <= 3, `1,000 checks took ${queries} queries (batches of up to 500)`)
})

t.test('one SUBSCRIBE of many filters: one return code per filter, refused ones 0x80', async (t) => {
  const app = await asApp(owner.token)
  t.teardown(() => app.end(true))
  const filters = [
    `devices/${mine.deviceId}/state`,
    `devices/${theirs.deviceId}/state`,
    `devices/${mine.deviceId}/cmd`,
    ...Array.from({ length: 200 }, () => `devices/${randomUUID()}/state`),
    'devices/not-a-device/state',
  ]
  const granted = await subscribeMany(app, filters)
  t.equal(granted.length, filters.length, 'a code for every filter')
  t.equal(granted[0], 1, 'its own device’s state')
  t.equal(granted[1], 128, 'not another account’s device')
  t.equal(granted[2], 128, 'never a device’s command topic')
  t.same(new Set(granted.slice(3)), new Set([128]), 'nor devices that do not exist')
  t.equal(app.connected, true, 'the app stays connected')
})

t.test('an app whose session is revoked loses its MQTT connection', async (t) => {
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('app-revoked'))
  const live = await asApp(owner.token)
  t.teardown(() => live.end(true))
  const doomed = await asApp(other.token)
  const closed = new Promise<void>((resolve) => doomed.once('close', () => resolve()))
  const res = await appFetch(`${svc.url}/sign-out`, {
    method: 'POST',
    headers: { authorization: `Bearer ${other.token}`, 'content-type': 'application/json', origin: svc.url },
    body: '{}',
  })
  t.equal(res.status, 200)
  // No explicit check and no sweep (every 60 s): the sign-out's cache clear closes it.
  await closed
  t.pass("the signed-out app's connection is closed by the revocation itself")
  await eventually(async () => live.connected)
  t.equal(live.connected, true, 'another account’s app is untouched')
})
