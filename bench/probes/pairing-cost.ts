// The pairing path's own cost, without the bench's other scenarios around it: N complete
// pairings (init → validate → get-init-device → MQTT CONNECT with the issued secret) against an
// app started in this process on PGlite, and per pairing the process's CPU time, the PGlite
// protocol round trips and the polls. Runs against any checkout (for bisecting: a worktree of an
// older commit with its own node_modules):
//
//   npx tsx bench/probes/pairing-cost.ts [CHECKOUT] [N]
//
// The CPU figure includes the client side (fetch, the MQTT client) in the same process; compare
// commits with each other on the same machine, alternating, never with the bench's figures.
import { resolve } from 'node:path'
import { startProbeApp } from './probe-app.js'

const root = resolve(process.argv[2] ?? '.')
const count = Number(process.argv[3] ?? 40)

const probe = await startProbeApp(root, { MQTT_CONNECT_RATE: '100000' })
const { app, db, post } = probe
const mqtt = (await probe.load('node_modules/mqtt/build/index.js')).default as typeof import('mqtt').default

const owner = (await post('/sign-up/email', { email: 'probe@example.com', password: 'correct-horse-battery', name: 'Probe' })).json
  .token as string
let polls = 0

async function pair(): Promise<void> {
  const init = await post('/api/device/init', { display: { width: 800, height: 480, palette: 'bw' }, model: 'probe', firmware: '1.0.0' })
  const validated = await post('/api/device/validate', { pinCode: init.json.pinCode, name: 'Probe' }, owner)
  if (validated.status >= 300) throw new Error(`validate ${validated.status} ${JSON.stringify(validated.json)}`)
  for (let i = 0; i < 50; i++) {
    polls++
    const answer = await post('/api/device/get-init-device', { deviceId: init.json.deviceId, deviceCode: init.json.deviceCode })
    const creds = answer.json.credentials as { clientId: string; username: string; password: string } | undefined
    if (!creds) continue
    const client = mqtt.connect(`mqtt://127.0.0.1:${app.mqttPort}`, {
      ...creds,
      clean: false,
      reconnectPeriod: 0,
    })
    await new Promise((done, fail) => {
      client.once('connect', done)
      client.once('error', fail)
    })
    await new Promise((done) => client.end(false, {}, done))
    return
  }
  throw new Error('no credentials after 50 polls')
}

for (let i = 0; i < 5; i++) await pair()
db.reset()
polls = 0
const cpu0 = process.cpuUsage()
const t0 = performance.now()
for (let i = 0; i < count; i++) await pair()
const cpu = process.cpuUsage(cpu0)
console.log(
  JSON.stringify({
    checkout: root,
    pairings: count,
    cpuMsPerPairing: Number(((cpu.user + cpu.system) / 1000 / count).toFixed(2)),
    wallMsPerPairing: Number(((performance.now() - t0) / count).toFixed(1)),
    pgliteRoundTripsPerPairing: db.roundTrips / count,
    pollsPerPairing: polls / count,
  }),
)
await probe.close()
process.exit(0)
