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
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const root = resolve(process.argv[2] ?? '.')
const count = Number(process.argv[3] ?? 40)
const load = (path: string) => import(pathToFileURL(join(root, path)).href)

type Answer = { status: number; json: Record<string, unknown> }
type Proto = Record<string, (...args: unknown[]) => unknown>

const { PGlite } = (await load('node_modules/@electric-sql/pglite/dist/index.js')) as { PGlite: { prototype: Proto } }
let roundTrips = 0
for (const name of ['execProtocol', 'execProtocolRaw']) {
  const original = PGlite.prototype[name]
  if (typeof original !== 'function') continue
  PGlite.prototype[name] = function (this: unknown, ...args: unknown[]) {
    roundTrips++
    return original.apply(this, args)
  }
}
const { loadConfig } = await load('src/config.ts')
const { buildApp } = await load('src/app.ts')
const mqtt = (await load('node_modules/mqtt/build/index.js')).default

const dataDir = mkdtempSync(join(tmpdir(), 'pairing-probe-'))
const port = 20_000 + Math.floor(Math.random() * 10_000)
const url = `http://127.0.0.1:${port}`
const app = await buildApp(
  loadConfig({
    HOST: '127.0.0.1',
    PORT: String(port),
    BASE_URL: url,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    MQTT_PORT: '0',
    RATE_LIMIT_MAX: '1000000',
    RATE_LIMIT_AUTH_MAX: '1000000',
    DEVICE_POLL_INTERVAL: '0',
    MQTT_CONNECT_RATE: '100000',
  }),
)
await app.listen({ port, host: '127.0.0.1' })

async function post(path: string, body: unknown, token?: string): Promise<Answer> {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  })
  return { status: res.status, json: (await res.json().catch(() => ({}))) as Record<string, unknown> }
}

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
    const client = mqtt.connect(`mqtt://127.0.0.1:${(app as { mqttPort?: number }).mqttPort}`, {
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
roundTrips = 0
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
    pgliteRoundTripsPerPairing: roundTrips / count,
    pollsPerPairing: polls / count,
  }),
)
await app.close()
rmSync(dataDir, { recursive: true, force: true })
process.exit(0)
