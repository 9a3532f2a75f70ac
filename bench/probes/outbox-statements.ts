// The outbox's two busiest statements of two checkouts side by side, in one process on one
// PGlite database: numbering a batch of 100 messages to 100 devices (the fan-out bench's batch)
// and marking 100 acknowledgements, alternating the checkouts round by round (A B, B A, …), CPU
// time per message. On two shared cores a whole-bench figure moves by more than these
// statements' difference; here both sides share the process, the database and the load.
//
//   npx tsx bench/probes/outbox-statements.ts CHECKOUT_A CHECKOUT_B [ROUNDS]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

type Message = { deviceId: string; kind: string; payload: Record<string, unknown>; retain: boolean; replacesOlder: boolean }
type Repository = {
  recordMessages(db: unknown, messages: Message[]): Promise<unknown>
  markDelivered(db: unknown, acks: Array<{ deviceId: string; seq: number }>): Promise<unknown>
}
type Db = { insert(t: unknown): { values(rows: unknown[]): Promise<unknown> } }

const [a, b] = [resolve(process.argv[2] ?? '.'), resolve(process.argv[3] ?? '.')]
const rounds = Number(process.argv[4] ?? 10)
const load = (root: string, path: string) => import(pathToFileURL(join(root, path)).href) as Promise<Record<string, unknown>>
const repos = {
  a: (await load(a, 'src/downlink/repository.ts')) as Repository,
  b: (await load(b, 'src/downlink/repository.ts')) as Repository,
}
const { openDatabase } = (await load(b, 'src/db/client.ts')) as {
  openDatabase(o: { dataDir: string }): { db: Db; migrate(): Promise<void>; close(): Promise<void> }
}
const { device } = (await load(b, 'src/devices/tables.ts')) as { device: unknown }
const { user } = (await load(b, 'src/db/schema.ts')) as { user: unknown }

const dataDir = mkdtempSync(join(tmpdir(), 'outbox-statements-'))
const handle = openDatabase({ dataDir })
await handle.migrate()
const db = handle.db
await db.insert(user).values([{ id: 'probe', name: 'Probe', email: 'probe@example.com' }])
// Each side its own 100 devices, so neither writes rows the other reads.
const ids = Array.from({ length: 200 }, (_, i) => `${String(i).padStart(4, '0')}-5f3c2a1e-8b7d-4c6a-9e2f-1a2b3c4d`)
await db.insert(device).values(
  ids.map((id) => ({
    id,
    name: 'probe',
    userId: 'probe',
    pinCode: `PIN-${id.slice(0, 4)}`,
    display: { width: 800, height: 480, palette: 'bw' },
    secretHash: 'x',
    secretIssuedAt: new Date(),
  })),
)
const devicesOf = { a: ids.slice(0, 100), b: ids.slice(100) }
const body = 'x'.repeat(160)
const acked = { a: 0, b: 0 }
const cpu: Record<string, number[]> = { 'a record': [], 'b record': [], 'a ack': [], 'b ack': [] }

async function perMessage(label: string, work: () => Promise<unknown>) {
  const start = process.cpuUsage()
  for (let i = 0; i < 20; i++) await work()
  const used = process.cpuUsage(start)
  cpu[label]!.push(Math.round((used.user + used.system) / 20 / 100))
}

async function side(s: 'a' | 'b') {
  await perMessage(`${s} record`, () =>
    repos[s].recordMessages(
      db,
      devicesOf[s].map((deviceId) => ({ deviceId, kind: 'cmd', payload: { n: acked[s], body }, retain: false, replacesOlder: false })),
    ),
  )
  await perMessage(`${s} ack`, () => {
    acked[s] += 1
    return repos[s].markDelivered(
      db,
      devicesOf[s].map((deviceId) => ({ deviceId, seq: acked[s] })),
    )
  })
}

for (let r = 0; r < rounds; r++) {
  if (r % 2) await side('b').then(() => side('a'))
  else await side('a').then(() => side('b'))
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
console.log(
  JSON.stringify({
    a,
    b,
    rounds,
    cpuUsPerMessage: Object.fromEntries(Object.entries(cpu).map(([k, xs]) => [k, { median: median(xs), all: xs }])),
  }),
)
await handle.close()
rmSync(dataDir, { recursive: true, force: true })
