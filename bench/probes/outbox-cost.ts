// The durable downlink's database work per delivery, without the bench around it: an app started
// in this process on PGlite, D devices (rows as bench/servers/ours.ts seeds them) connected as raw
// MQTT sockets with persistent sessions, M messages to each through app.deviceLink.publish with
// 100 in flight (the fan-out workload), then until every PUBACK is written. Prints PGlite's
// statements and round trips per delivery, its milliseconds per delivery by statement, and the
// process's CPU per delivery (the devices included: compare commits with each other, alternating,
// never with the bench's figures). Runs against any checkout (a worktree of an older commit):
//
//   npx tsx bench/probes/outbox-cost.ts [CHECKOUT] [DEVICES] [MESSAGES]
import { resolve } from 'node:path'
import { makeCreds } from '../lib/ours.js'
import { RawDevice } from '../lib/raw-mqtt.js'
import { startProbeApp } from './probe-app.js'

const root = resolve(process.argv[2] ?? '.')
const devices = Number(process.argv[3] ?? 200)
const messages = Number(process.argv[4] ?? 20)

type Outbox = { publish(id: string, kind: string, payload: object): Promise<void>; settled(): Promise<void> }
type Db = { insert(t: unknown): { values(rows: unknown[]): Promise<unknown> } }

const probe = await startProbeApp(root, { MQTT_CONNECT_RATE: '100000' })
const app = probe.app as typeof probe.app & { deviceLink: Outbox; database: { db: Db } }
const owner = await probe.post('/sign-up/email', { email: 'probe@example.com', password: 'correct-horse-battery', name: 'Probe' })
const userId = (owner.json.user as { id: string }).id
const { device } = (await probe.load('src/devices/tables.ts')) as { device: unknown }
const { sha256 } = (await probe.load('src/devices/codes.ts')) as { sha256(s: string): string }
const { DEFAULT_DISPLAY } = (await probe.load('src/images/profiles.ts')) as { DEFAULT_DISPLAY: unknown }

const creds = makeCreds(devices)
await app.database.db.insert(device).values(
  creds.map((c) => ({
    id: c.id,
    name: `probe ${c.id.slice(0, 8)}`,
    userId,
    pinCode: 'BCDF-GHJK',
    display: DEFAULT_DISPLAY,
    secretHash: sha256(c.secret),
    secretIssuedAt: new Date(),
  })),
)
let received = 0
for (const c of creds) {
  const d = new RawDevice({
    host: '127.0.0.1',
    port: app.mqttPort!,
    clientId: c.id,
    username: c.id,
    password: c.secret,
    clean: false,
    keepalive: 60,
    timeoutMs: 10_000,
  })
  if ((await d.connect()) !== 0) throw new Error('connect refused')
  await d.subscribe([`devices/${c.id}/cmd`])
  d.onPublish = () => {
    received += 1
  }
}
// Sessions settle (presence, resends of nothing) before the measured window.
await new Promise((r) => setTimeout(r, 1500))
await app.deviceLink.settled()

const statements = new Map<string, { n: number; ms: number }>()
const { PGlite } = (await probe.load('node_modules/@electric-sql/pglite/dist/index.js')) as {
  PGlite: { prototype: Record<string, (...a: unknown[]) => unknown> }
}
// A statement's round trips are attributed to the last Parse (or simple query) before them.
let current = '(other)'
// Queries go through execProtocolStream (one call per protocol message: Parse, Describe, Bind,
// Describe, Execute, Sync).
const original = PGlite.prototype.execProtocolStream!
PGlite.prototype.execProtocolStream = async function (this: unknown, ...args: unknown[]) {
  const msg = args[0] as Uint8Array
  if (msg[0] === 0x50 || msg[0] === 0x51) {
    const text = Buffer.from(msg.subarray(5)).toString('utf8')
    const sqlText = msg[0] === 0x50 ? text.slice(text.indexOf('\0') + 1) : text
    current = sqlText.replace(/\s+/g, ' ').trim().slice(0, 70)
    const s = statements.get(current) ?? { n: 0, ms: 0 }
    s.n += 1
    statements.set(current, s)
  }
  roundTrips += 1
  const t = performance.now()
  try {
    return await original.apply(this, args)
  } finally {
    const s = statements.get(current)
    if (s) s.ms += performance.now() - t
  }
}
let roundTrips = 0

const cpu0 = process.cpuUsage()
const t0 = performance.now()
const jobs: Array<[string, number]> = []
for (let m = 0; m < messages; m++) for (const c of creds) jobs.push([c.id, m])
let next = 0
const body = 'x'.repeat(160)
await Promise.all(
  Array.from({ length: 100 }, async () => {
    while (next < jobs.length) {
      const [id, m] = jobs[next++]!
      await app.deviceLink.publish(id, 'cmd', { n: m, body })
    }
  }),
)
const total = devices * messages
while (received < total) await new Promise((r) => setTimeout(r, 5))
// Every PUBACK reaches the outbox a moment after its PUBLISH; then its window is written.
await new Promise((r) => setTimeout(r, 200))
await app.deviceLink.settled()
const cpu = process.cpuUsage(cpu0)
const elapsed = performance.now() - t0
const perDelivery = (n: number) => Number((n / total).toFixed(4))
console.log(
  JSON.stringify(
    {
      checkout: root,
      deliveries: total,
      seconds: Number((elapsed / 1000).toFixed(2)),
      cpuUsPerDelivery: Math.round((cpu.user + cpu.system) / total),
      pgliteStatementsPerDelivery: perDelivery([...statements.values()].reduce((a, s) => a + s.n, 0)),
      pgliteRoundTripsPerDelivery: perDelivery(roundTrips),
      pgliteUsPerDelivery: Math.round(([...statements.values()].reduce((a, s) => a + s.ms, 0) * 1000) / total),
      byStatement: [...statements]
        .sort((a, b) => b[1].ms - a[1].ms)
        .slice(0, 8)
        .map(([sql, s]) => ({ sql, n: s.n, usPerDelivery: Math.round((s.ms * 1000) / total) })),
    },
    null,
    1,
  ),
)
await probe.close()
process.exit(0)
