// One account converting pictures for a large display cannot stall the service for others: a
// display larger than any real panel is refused when it pairs; while one account's conversions
// for the largest display allowed run, another account's simple requests are answered about as
// fast as with nothing running (a ratio to a baseline measured here, not a time); and one account
// flooding conversions delays another account's conversion by at most its turn (an order, not a time).
import t from 'tap'
import { Worker } from 'node:worker_threads'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { uploadImage } from '../helpers/uploads.js'
import { drawnPng } from './pixels.js'
import { eventually } from '../helpers/mqtt.js'

const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', IMAGE_WORKERS: '1' } })
/** The largest e-paper display served (3200×1800, E Ink's largest panel): the most dithering one send can cost. */
const LARGEST = { width: 3200, height: 1800, palette: 'acep7' }
/** A small picture of many colours, as a photo is (one flat colour dithers faster than any photo). */
const picture = (seed: number) =>
  drawnPng(320, 180, (x, y) => [(x * 37 + y * 11 + seed) % 256, (x * x + y * 7) % 256, (x * y + seed * 3) % 256])

t.test('a display larger than any real panel is refused at pairing', async (t) => {
  for (const [label, display] of [
    ['an e-paper display of 4K UHD', { width: 3840, height: 2160, palette: 'spectra6' }],
    ['an e-paper display longer than any panel', { width: 3300, height: 400, palette: 'bw' }],
    ['a colour display over 4K UHD', { width: 3840, height: 2400, palette: 'color' }],
  ] as const) {
    const res = await jsonCall(svc.url, '/api/device/init', { body: { display, model: 'huge', firmware: '1.0.0' } })
    t.equal(res.status, 400, `${label}: 400`)
    t.equal(res.body.code, 'DISPLAY_TOO_LARGE', label)
    t.type(res.body.message, 'string')
  }
  for (const display of [
    { width: 4096, height: 4096, palette: 'acep7' },
    { width: 3841, height: 100, palette: 'color' },
  ]) {
    const res = await jsonCall(svc.url, '/api/device/init', { body: { display } })
    t.equal(res.status, 400, `${display.width}×${display.height}: a side over 3840 is refused by the schema`)
    t.equal(res.body.code, 'VALIDATION_ERROR')
    t.match(res.body.message, /3840/, 'naming the bound')
  }
  for (const display of [LARGEST, { width: 1800, height: 3200, palette: 'bw' }, { width: 2160, height: 3840, palette: 'color' }]) {
    const res = await jsonCall(svc.url, '/api/device/init', { body: { display } })
    t.equal(res.status, 200, `${display.width}×${display.height} ${display.palette}: the bound itself pairs`)
  }
})

/**
 * Latencies of GET `url` sent every `everyMs` for `durationMs`, whether or not earlier ones were
 * answered (as many clients send), from a thread of its own: the service runs in this test's
 * process, and a sender on its event loop would stop sending whenever that loop is blocked.
 */
function latenciesFromAnotherThread(url: string, token: string, durationMs: number, everyMs: number): Promise<number[]> {
  const code = `
    const { parentPort, workerData: { url, token, durationMs, everyMs } } = require('node:worker_threads')
    const out = []
    const pending = []
    const timer = setInterval(() => {
      const t0 = performance.now()
      pending.push(fetch(url, { headers: { authorization: 'Bearer ' + token } }).then(async (res) => {
        await res.arrayBuffer()
        out.push(res.status === 200 ? performance.now() - t0 : -1)
      }))
    }, everyMs)
    setTimeout(async () => {
      clearInterval(timer)
      await Promise.all(pending)
      parentPort.postMessage(out)
    }, durationMs)`
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: { url, token, durationMs, everyMs }, execArgv: [] })
    worker.once('message', (out: number[]) => {
      if (out.some((ms) => ms < 0)) reject(new Error('a get-session was not answered 200'))
      else resolve(out)
      void worker.terminate()
    })
    worker.once('error', reject)
  })
}

/** The q-quantile of `xs` (0.9: nine in ten took no longer). */
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))]!

t.test('another account is served promptly while one account converts', async (t) => {
  const heavy = await signUp(makeClient(svc.url).client, uniqueEmail('heavy'))
  const light = await signUp(makeClient(svc.url).client, uniqueEmail('light'))
  const dev = await pairDevice(svc, heavy.token, LARGEST)
  const key = await uploadImage(svc.url, heavy.token, await picture(1))
  const send = () => jsonCall(svc.url, '/api/upload/send', { token: heavy.token, body: { key, deviceId: dev.deviceId } })
  const sample = (ms = 2000) => latenciesFromAnotherThread(`${svc.url}/get-session`, light.token, ms, 20)
  // Warm: the worker started, the session cached, the route compiled.
  t.equal((await send()).status, 200, 'a send converts')
  await sample(500)
  const quiet = await sample()

  // Two sends kept in flight until the light account's requests are done.
  let measuring = true
  let sent = 0
  const lane = async () => {
    while (measuring) {
      const res = await send()
      if (res.status !== 200) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`)
      sent++
    }
  }
  const lanes = [lane(), lane()]
  await eventually(async () => svc.app.images.running > 0)
  const loaded = await sample()
  measuring = false
  await Promise.all(lanes)
  t.ok(sent >= 2, `${sent} conversions for the largest display ran meanwhile`)
  const fmt = (xs: number[]) => [0.5, 0.9, 1].map((q) => quantile(xs, q).toFixed(1)).join(' / ')
  t.comment(`get-session ms, median / p90 / max: quiet ${fmt(quiet)}, during ${fmt(loaded)}`)
  const ratio = quantile(loaded, 0.9) / quantile(quiet, 0.9)
  t.ok(ratio <= 10, `p90 of get-session during the conversions is ${ratio.toFixed(1)} times the quiet p90 (at most 10)`)
  t.ok(loaded.length >= 10, `${loaded.length} requests sent during the conversions`)
})

t.test('one account flooding conversions delays another’s by its turn only', async (t) => {
  const flood = await signUp(makeClient(svc.url).client, uniqueEmail('flood'))
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('other'))
  const floodDev = await pairDevice(svc, flood.token, LARGEST)
  const otherDev = await pairDevice(svc, other.token, LARGEST)
  const floodKey = await uploadImage(svc.url, flood.token, await picture(2))
  const otherKey = await uploadImage(svc.url, other.token, await picture(3))
  const finished: string[] = []
  const send = (label: string, token: string, key: string, deviceId: string) =>
    jsonCall(svc.url, '/api/upload/send', { token, body: { key, deviceId } }).then((res) => {
      finished.push(label)
      return res.status
    })
  const FLOOD = 6
  const floods = Array.from({ length: FLOOD }, (_, i) => send(`flood${i + 1}`, flood.token, floodKey, floodDev.deviceId))
  // The whole flood is queued (one converting, the rest waiting) before the other account asks.
  await eventually(async () => svc.app.images.running + svc.app.images.waiting >= FLOOD)
  const mine = send('other', other.token, otherKey, otherDev.deviceId)
  t.same(await Promise.all([...floods, mine]), Array(FLOOD + 1).fill(200), 'every send converted')
  const place = finished.indexOf('other') + 1
  const threads = svc.app.images.threads
  // Before it: the conversions running when it was queued, and one more of the flood's (its turn came after the flood's).
  t.ok(place <= threads + 2, `the other account's send finished ${place} of ${FLOOD + 1} (${finished.join(', ')})`)
})
