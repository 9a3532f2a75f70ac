// Device logs end to end: batches over MQTT (up/log) and over HTTP with the device's secret, read
// back by the owner with level, time and text filters and paging; every limit (rate, entry and
// batch size, count, age) refuses or drops what is past it, counts it per device, and nothing
// crashes or loops. The service's clock is moved by the test for the rate and the age.
import t from 'tap'
import { join } from 'node:path'
import { SimDevice, resolveProfile } from '../../device-sim/index.js'
import { tempDir } from '../device-sim/helpers.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

let now = Date.parse('2026-06-01T12:00:00Z')
const clock = () => new Date(now)

type Counts = { accepted: number; droppedRate: number; droppedSize: number; droppedInvalid: number; pruned: number }

t.test('device logs: both ways in, filters and paging, and every limit counted', async (t) => {
  const svc = await startApp(t, {
    clock,
    env: { DEVICE_POLL_INTERVAL: '0', LOG_MAX_ENTRIES: '40', LOG_RATE_PER_MINUTE: '60', LOG_BURST: '60' },
  })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('logs'))
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('logs-other'))
  const dev = await pairDevice(svc, token)
  const theirs = await pairDevice(svc, other.token)
  const c = await connect(mqttUrl(svc), { clientId: dev.clientId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(c))
  const read = async (query = '') => (await jsonCall(svc.url, `/api/device/${dev.deviceId}/logs${query}`, { token })).body
  const countsNow = async () => (await read()).counts as Counts
  const post = (body: unknown, secret = dev.password, id = dev.deviceId) =>
    appFetch(`${svc.url}/api/device/${id}/logs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })

  // Over MQTT: five entries, one dated by the device, one with fields.
  c.publish(
    `devices/${dev.deviceId}/up/log`,
    JSON.stringify([
      { at: '2026-06-01T11:00:00Z', level: 'info', message: 'booted firmware 1.2.0' },
      { level: 'debug', message: 'wifi rssi -61' },
      { level: 'warn', message: 'battery 18%', fields: { battery: 18 } },
      { level: 'error', message: 'display refresh FAILED (busy)' },
      { level: 'shout', message: 'unknown level becomes info' },
    ]),
    { qos: 1 },
  )
  await eventually(async () => (await countsNow()).accepted === 5)
  const all = await read()
  t.equal(all.logs.length, 5)
  t.equal(all.logs.at(-1).message, 'booted firmware 1.2.0', 'the entry dated by the device is the oldest')
  t.equal(all.logs.at(-1).at, '2026-06-01T11:00:00.000Z')
  t.same(all.logs.find((l: { message: string }) => l.message === 'battery 18%').fields, { battery: 18 })
  t.equal(all.logs.find((l: { message: string }) => l.message.startsWith('unknown level')).level, 'info')
  t.same((await read('?level=warn')).logs.map((l: { level: string }) => l.level).sort(), ['error', 'warn'], 'warn and above')
  t.same(
    (await read('?q=FAILED')).logs.map((l: { message: string }) => l.message),
    ['display refresh FAILED (busy)'],
  )
  t.same(
    (await read('?q=%25')).logs.map((l: { message: string }) => l.message),
    ['battery 18%'],
    '% is matched literally, not as a wildcard',
  )
  t.same(
    (await read('?until=2026-06-01T11:30:00Z')).logs.map((l: { message: string }) => l.message),
    ['booted firmware 1.2.0'],
  )
  t.equal((await read('?since=2026-06-01T11:30:00Z')).logs.length, 4)
  const seen: string[] = []
  let cursor = ''
  do {
    const page = await read(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
    seen.push(...page.logs.map((l: { id: string }) => l.id))
    cursor = page.nextCursor ?? ''
  } while (cursor)
  t.same(
    seen,
    all.logs.map((l: { id: string }) => l.id),
    'pages of two cover them all, in order',
  )

  // Over HTTP with the device's secret; anyone else is refused.
  const ok = await post([{ level: 'info', message: 'from http' }])
  t.equal(ok.status, 200)
  t.match(await ok.json(), { accepted: 1, droppedRate: 0 })
  t.equal((await post([{ message: 'x' }], 'wrong-secret')).status, 401)
  t.equal((await post([{ message: 'x' }], theirs.password)).status, 401, "another device's secret")
  t.equal((await post([{ message: 'x' }], dev.password, theirs.deviceId)).status, 401, "another device's id")
  t.equal(
    (await jsonCall(svc.url, `/api/device/${dev.deviceId}/logs`, { token: other.token })).status,
    404,
    'another user cannot read them',
  )

  // Size: entries too long are refused and counted; a batch too big is 413 (HTTP) or dropped (MQTT), counted.
  // What PostgreSQL cannot store is refused as not a log entry, never a 500; an absurd date is the arrival time.
  const odd = await post([
    { message: 'lone surrogate', fields: { k: '\ud800' } },
    { message: 'year -250000', at: -8e15 },
  ])
  t.equal(odd.status, 200)
  t.match(await odd.json(), { accepted: 1, droppedInvalid: 1 })
  t.equal((await read('?q=year -250000')).logs[0].at, new Date(now).toISOString())
  const sized = await post([{ message: 'x'.repeat(2000) }, { message: 'ok', fields: { blob: 'y'.repeat(3000) } }, { message: 'fine' }])
  t.match(await sized.json(), { accepted: 1, droppedSize: 2 })
  const big = await post(Array.from({ length: 101 }, () => ({ message: 'm' })))
  t.equal(big.status, 413)
  t.match(await big.json(), { code: 'PAYLOAD_TOO_LARGE', message: /at most 100 entries/ })
  c.publish(
    `devices/${dev.deviceId}/up/log`,
    JSON.stringify([{ message: 'z'.repeat(1000) }])
      .repeat(1)
      .padEnd(70 * 1024, ' '),
    { qos: 1 },
  )
  // Not log entries at all: not JSON, an object, entries without a message.
  c.publish(`devices/${dev.deviceId}/up/log`, 'not json', { qos: 1 })
  c.publish(`devices/${dev.deviceId}/up/log`, JSON.stringify({ message: 'an object' }), { qos: 1 })
  c.publish(`devices/${dev.deviceId}/up/log`, JSON.stringify([{ level: 'info' }, 42, null]), { qos: 1 })
  // (Over HTTP a NUL anywhere in a JSON body is refused before it reaches the logs: 400 INVALID_CHARACTER.)
  c.publish(`devices/${dev.deviceId}/up/log`, JSON.stringify([{ message: 'nul in fields', fields: { k: 'a\u0000b' } }]), { qos: 1 })
  await eventually(async () => {
    const n = await countsNow()
    return n.droppedSize === 2 + 101 + 1 && n.droppedInvalid === 1 + 1 + 1 + 3 + 1
  })
  t.pass('oversize entries and batches, and what is not a log entry, counted per device')

  // Rate: 60 a minute with bursts of 60. 8 taken so far; a batch of 60 gets 52, the rest dropped.
  const burst = await post(Array.from({ length: 60 }, (_, i) => ({ message: `burst ${i}` })))
  t.match(await burst.json(), { accepted: 52, droppedRate: 8 })
  t.match(await (await post([{ message: 'still over' }])).json(), { accepted: 0, droppedRate: 1 }, 'nothing left this minute')
  now += 30_000
  t.match(await (await post(Array.from({ length: 40 }, () => ({ message: 'half a minute later' })))).json(), {
    accepted: 30,
    droppedRate: 10,
  })

  // Count: 40 kept per device, the oldest dropped.
  const counted = await countsNow()
  t.equal(counted.accepted, 5 + 1 + 1 + 1 + 52 + 30)
  t.equal(counted.pruned, counted.accepted - 40, 'pruned to the newest 40')
  t.equal((await read('?limit=200')).logs.length, 40)
  t.ok(c.connected, 'the device is still connected after all of it')

  // Age: a week later (LOG_MAX_AGE_DAYS 7) the sweep removes them.
  now += 8 * 86_400_000
  await svc.app.deviceLogs!.sweep()
  t.equal((await read()).logs.length, 0, 'older than the age limit: gone')
  t.equal((await countsNow()).pruned, counted.accepted, 'and counted as pruned')
})

t.test('the simulator sends log batches its owner reads (--log-rate)', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('logs-sim'))
  const dir = await tempDir(t)
  const dev = new SimDevice({
    server: svc.url,
    mqttUrl: mqttUrl(svc),
    name: 'chatty',
    display: resolveProfile('bw-800x480'),
    statePath: join(dir, 'chatty.json'),
    claimToken: token,
    logsPerMinute: 60,
  })
  t.teardown(() => dev.stop())
  await dev.start()
  // A batch now rather than in ten seconds: what the timer does.
  t.ok(dev.sendLogs(10), 'sent while connected')
  const logs = await eventually(async () => {
    const body = (await jsonCall(svc.url, `/api/device/${dev.deviceId}/logs`, { token })).body
    return body.logs.length === 10 ? body : null
  })
  t.equal(logs.counts.accepted, 10)
  t.ok(
    logs.logs.every((l: { message: string }) => /heartbeat|wifi rssi/.test(l.message)),
    'what a frame logs',
  )
})
