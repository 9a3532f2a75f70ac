// The simulator as a TRMNL device (polling over HTTP, as the firmware does) beside an MQTT frame on
// one account: both pair with a code, both show the same playlist, each through its own transport;
// the polling one is asked to sleep through its sleep window.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { SimDevice, TrmnlSimDevice, type TrmnlSimEvents, checkBmp, checkPngFor, resolveProfile } from '../../device-sim/index.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { eventually, mqttUrl } from '../helpers/mqtt.js'
import { uploadPng } from '../helpers/uploads.js'
import { nextEvent, tempDir } from './helpers.js'

/** The TRMNL simulator's next `event` (matching `accept`). */
function next<K extends keyof TrmnlSimEvents>(
  dev: TrmnlSimDevice,
  event: K,
  accept: (e: TrmnlSimEvents[K][0]) => boolean = () => true,
): Promise<TrmnlSimEvents[K][0]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${event}" within 20 s`)), 20_000)
    const listener = (...args: TrmnlSimEvents[K]) => {
      if (!accept(args[0])) return
      clearTimeout(timer)
      ;(dev.off as (e: K, l: typeof listener) => void)(event, listener)
      resolve(args[0])
    }
    ;(dev.on as (e: K, l: typeof listener) => void)(event, listener)
  })
}

let now = Date.parse('2026-06-01T12:00:00Z')
const clock = () => new Date(now)

t.test('checkBmp refuses what the firmware would not draw', async (t) => {
  const good = Buffer.alloc(62 + 100 * 480)
  good.write('BM', 0, 'latin1')
  good.writeUInt32LE(good.length, 2)
  good.writeUInt32LE(62, 10)
  good.writeUInt32LE(40, 14)
  good.writeInt32LE(800, 18)
  good.writeInt32LE(480, 22)
  good.writeUInt16LE(1, 26)
  good.writeUInt16LE(1, 28)
  good.writeUInt32LE(48_000, 34)
  good.writeUInt32LE(2, 46)
  good.writeUInt32LE(0xffffff, 58)
  t.same(checkBmp(good), { width: 800, height: 480 })
  const topDown = Buffer.from(good)
  topDown.writeInt32LE(-480, 22)
  t.throws(() => checkBmp(topDown), /top-down/)
  const inverted = Buffer.from(good)
  inverted.writeUInt32LE(0xffffff, 54)
  inverted.writeUInt32LE(0, 58)
  t.throws(() => checkBmp(inverted), /palette/)
  t.throws(() => checkBmp(good.subarray(0, good.length - 1)), /size/)
  const noDataSize = Buffer.from(good)
  noDataSize.writeUInt32LE(0, 34)
  t.throws(() => checkBmp(noDataSize), /image data size/)
})

t.test('an MQTT frame and a TRMNL device on one account show the same playlist', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0', TRMNL_REFRESH_SECONDS: '5' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('mixed'))
  const dir = await tempDir(t)
  const mqttFrame = new SimDevice({
    server: svc.url,
    mqttUrl: mqttUrl(svc),
    name: 'kitchen',
    display: resolveProfile('bw-800x480'),
    statePath: join(dir, 'kitchen.json'),
    claimToken: token,
    clock,
  })
  t.teardown(() => mqttFrame.stop())
  const trmnl = new TrmnlSimDevice({
    server: svc.url,
    name: 'hall',
    statePath: join(dir, 'hall.json'),
    outDir: join(dir, 'hall-images'),
    claimToken: token,
    maxSleepMs: 100,
  })
  t.teardown(() => trmnl.stop())
  const warnings: string[] = []
  trmnl.on('warning', (w) => warnings.push(w.message))
  const paired = next(trmnl, 'image')
  await Promise.all([mqttFrame.start(), trmnl.start()])
  t.match((await paired).filename, /^[0-9a-f]{13}-\d{10}$/, 'the TRMNL device pairs by its code and shows the paired screen')

  const devices = (await jsonCall(svc.url, '/api/device', { token })).body.devices as Array<{ id: string; name: string; isActive: boolean }>
  t.same(devices.map((d) => d.name).sort(), ['hall', 'kitchen'], 'one device list')
  const hall = devices.find((d) => d.name === 'hall')!
  t.ok(hall.isActive, 'the polling device is online')

  const items = [
    { kind: 'upload', key: await uploadPng(svc.url, token, 'black', 160, 120) },
    { kind: 'upload', key: await uploadPng(svc.url, token, 'white', 160, 120) },
  ]
  const list = (await jsonCall(svc.url, '/api/playlists', { token, body: { name: 'Both', mode: 'sequential', itemSeconds: 3600, items } }))
    .body
  const day = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
  for (const id of [mqttFrame.deviceId!, hall.id]) {
    const put = await jsonCall(svc.url, `/api/device/${id}/schedule`, {
      token,
      method: 'PUT',
      body: { timeZone: 'UTC', rules: [{ playlistId: list.id, days: day, from: '00:00', to: '24:00' }], sleep: [] },
    })
    t.equal(put.status, 200, JSON.stringify(put.body))
  }
  const mqttImage = nextEvent(mqttFrame, 'image')
  const trmnlImage = next(trmnl, 'image')
  await svc.app.scheduler!.tick()
  const shown = (await mqttImage).message.imageId
  t.ok(shown, 'the MQTT frame shows the picture')
  t.match((await trmnlImage).filename, /^[0-9a-f]{13}-\d{10}$/, 'the same picture reaches the polling device, under a name its cache keeps')
  await eventually(async () => (await jsonCall(svc.url, `/api/device/${hall.id}`, { token })).body.isSynced)
  t.pass('and it is in sync once it fetched it')
  const first = trmnl.filename!
  t.same(
    (await next(trmnl, 'poll')).playlist,
    [first],
    'playlist: the rotation as far as it has files (the second upload is converted at its turn)',
  )

  // The next turn: the second picture, and the rotation now names both files, the one shown first.
  now += 3600_000
  const second = next(trmnl, 'image')
  await svc.app.scheduler!.tick()
  const { filename } = await second
  t.not(filename, first)
  t.same((await next(trmnl, 'poll')).playlist, [filename, first], 'playlist: both files of the rotation')

  // Another playlist: the device prunes what the rotation no longer names.
  const other = (
    await jsonCall(svc.url, '/api/playlists', {
      token,
      body: {
        name: 'Grey',
        mode: 'sequential',
        itemSeconds: 3600,
        items: [{ kind: 'upload', key: await uploadPng(svc.url, token, 'grey', 160, 120) }],
      },
    })
  ).body
  // Between the new plan and its first turn the rotation names only the file shown: pruning may come in two steps.
  const pruned = new Set<string>()
  trmnl.on('pruned', (p) => {
    for (const f of p.filenames) pruned.add(f)
  })
  t.equal(
    (
      await jsonCall(svc.url, `/api/device/${hall.id}/schedule`, {
        token,
        method: 'PUT',
        body: { timeZone: 'UTC', rules: [{ playlistId: other.id, days: day, from: '00:00', to: '24:00' }], sleep: [] },
      })
    ).status,
    200,
  )
  await svc.app.scheduler!.tick()
  await eventually(async () => pruned.size === 2)
  t.same([...pruned].sort(), [filename, first].sort(), 'both files of the old rotation leave its cache')
  t.same(
    (await readdir(join(dir, 'hall-images'))).map((f) => f.replace(/\.(bmp|png)$/, '')),
    [trmnl.filename],
    'only the picture shown now is left',
  )

  // A sleep window now: the polling device is told to come back when it ends.
  const sleep = await jsonCall(svc.url, `/api/device/${hall.id}/schedule`, {
    token,
    method: 'PUT',
    body: {
      timeZone: 'UTC',
      rules: [{ playlistId: list.id, days: day, from: '00:00', to: '24:00' }],
      sleep: [{ from: '12:00', to: '14:00' }],
    },
  })
  t.equal(sleep.status, 200)
  await svc.app.scheduler!.tick()
  const poll = await next(trmnl, 'poll', (p) => p.refreshRate > 60)
  t.equal(poll.refreshRate, 3600, 'refresh_rate runs to the end of the sleep window')
  t.same(warnings, [])
})

t.test('the simulator refuses what the firmware would not draw upright at its panel size', async (t) => {
  const { encodeIndexedPng, encodeGrayPng } = await import('../../src/images/png.js')
  const og = { width: 800, height: 480, maxPngBits: 2 }
  const blackFirst = encodeIndexedPng(new Uint8Array(800 * 480), 800, 480, [
    [0, 0, 0],
    [255, 255, 255],
  ])
  t.throws(() => checkPngFor(blackFirst, og, '1.8.14'), /negative/, 'a 1-bit palette PNG, darker entry first, on 1.6.6 and later')
  t.same(checkPngFor(blackFirst, og, '1.6.5'), { width: 800, height: 480, bitDepth: 1 }, 'drawn as it is before 1.6.6')
  const grey = encodeGrayPng(new Uint8Array(800 * 480), 800, 480, 1)
  t.same(checkPngFor(grey, og, '1.8.14'), { width: 800, height: 480, bitDepth: 1 }, 'greyscale: drawn as it is')
  t.throws(() => checkPngFor(encodeGrayPng(new Uint8Array(801 * 480), 801, 480, 1), og, '1.8.14'), /larger than/)
  t.throws(() => checkPngFor(encodeGrayPng(new Uint8Array(400 * 240), 400, 240, 1), og, '1.8.14'), /not at the panel's size/)
  t.throws(() => checkPngFor(encodeGrayPng(new Uint8Array(800 * 480), 800, 480, 4), og, '1.8.14'), /4 bits/)
})
