// The delivery path's own cost, without the bench's other scenarios around it: N generations with
// the local provider for a paired, connected 800×480 1-bit device (POST /api/generate → the MQTT
// message on devices/{id}/image → the device downloads its URL), one at a time, against an app
// started in this process on PGlite. Per delivery: wall time (p50 and the stages: the POST's
// answer, the MQTT message, the download), the process's CPU time, PGlite round trips and the time
// spent waiting on them. Runs against any checkout (for bisecting: a worktree of an older commit
// with its own node_modules):
//
//   npx tsx bench/probes/delivery-cost.ts [CHECKOUT] [N]
//
// The CPU figure includes the client side (fetch, the MQTT client) in the same process; compare
// commits with each other on the same machine, alternating, never with the bench's figures.
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { resolve } from 'node:path'
import { type Json, startProbeApp } from './probe-app.js'

const root = resolve(process.argv[2] ?? '.')
const count = Number(process.argv[3] ?? 20)

const probe = await startProbeApp(root, {
  LOCAL_PROVIDER_DURATION_MS: '0',
  GENERATION_TICK_MS: '10',
  GENERATION_POLL_BASE_MS: '10',
  GENERATION_POLL_MAX_MS: '10',
})
const { app, db, post } = probe
const mqtt = (await probe.load('node_modules/mqtt/build/index.js')).default as typeof import('mqtt').default

const owner = (await post('/sign-up/email', { email: 'probe@example.com', password: 'correct-horse-battery', name: 'Probe' })).json
  .token as string
const init = await post('/api/device/init', { display: { width: 800, height: 480, palette: 'bw' }, model: 'probe', firmware: '1.0.0' })
await post('/api/device/validate', { pinCode: init.json.pinCode, name: 'Probe' }, owner)
const deviceId = init.json.deviceId as string
const creds = (await post('/api/device/get-init-device', { deviceId, deviceCode: init.json.deviceCode })).json.credentials as Json
const device = await mqtt.connectAsync(`mqtt://127.0.0.1:${app.mqttPort}`, {
  ...creds,
  clean: false,
  reconnectPeriod: 0,
})
const topic = `devices/${deviceId}/image`
await device.subscribeAsync(topic, { qos: 1 })

async function startProfile(): Promise<() => Promise<void>> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.start')
  return async () => {
    const { profile } = await session.post('Profiler.stop')
    writeFileSync(process.env.PROBE_PROFILE!, JSON.stringify(profile))
    session.disconnect()
  }
}

let n = 0
async function deliver() {
  const t0 = performance.now()
  const got = new Promise<Buffer>((done) => {
    const on = (t: string, payload: Buffer) => {
      if (t !== topic) return
      device.off('message', on)
      done(payload)
    }
    device.on('message', on)
  })
  const res = await post('/api/generate', { prompt: { text: `a quiet harbour at dawn, take ${n++}` }, deviceId, model: 'local' }, owner)
  if (res.status !== 202) throw new Error(`generate ${res.status} ${JSON.stringify(res.json)}`)
  const answered = performance.now() - t0
  const msg = JSON.parse((await got).toString('utf8')) as { url: string; sha256: string }
  const published = performance.now() - t0
  const img = Buffer.from(await (await fetch(msg.url)).arrayBuffer())
  if (createHash('sha256').update(img).digest('hex') !== msg.sha256) throw new Error('image bytes do not match the message')
  return { answered, published, downloaded: performance.now() - t0 }
}

for (let i = 0; i < 3; i++) await deliver()
db.reset()
// PROBE_PROFILE=FILE: a CPU profile of the main thread over the measured deliveries only.
const profiling = process.env.PROBE_PROFILE ? await startProfile() : undefined
const cpu0 = process.cpuUsage()
const times: Array<{ answered: number; published: number; downloaded: number }> = []
for (let i = 0; i < count; i++) times.push(await deliver())
const cpu = process.cpuUsage(cpu0)
await profiling?.()
const p50 = (k: keyof (typeof times)[number]) =>
  Number(
    times
      .map((t) => t[k])
      .sort((a, b) => a - b)
      [Math.floor(times.length / 2)]!.toFixed(1),
  )
console.log(
  JSON.stringify({
    checkout: root,
    deliveries: count,
    p50Ms: { answered: p50('answered'), published: p50('published'), downloaded: p50('downloaded') },
    cpuMsPerDelivery: Number(((cpu.user + cpu.system) / 1000 / count).toFixed(1)),
    pgliteRoundTripsPerDelivery: db.roundTrips / count,
    pgliteMsPerDelivery: Number((db.ms / count).toFixed(1)),
  }),
)
await device.endAsync()
await probe.close()
process.exit(0)
