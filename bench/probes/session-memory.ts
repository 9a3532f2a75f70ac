// What an idle service and its idle device sessions hold: starts our server as the sessions
// benchmark does (the bundle on plain node, --expose-gc --max-semi-space-size=1, PostgreSQL when
// it answers, else PGlite), reads resident memory once steady, process.memoryUsage() and
// /proc/<pid>/smaps_rollup, connects N raw MQTT devices (persistent sessions, a QoS 1
// subscription to devices/{id}/#) and reads them again. With a folder it also writes V8 heap
// snapshots before and after (idle.heapsnapshot, sessions.heapsnapshot) for heap-diff.ts:
//
//   npx tsx bench/probes/session-memory.ts [N=10000] [SNAPSHOT_DIR]
//
// N=0 reads the idle service only.
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { deviceFilter } from '../../src/mqtt/contract.js'
import { startFleet } from '../lib/fleet.js'
import { freshPostgres, makeCreds, startOurs, writeCreds } from '../lib/ours.js'
import { sourceAddresses } from '../lib/ports.js'
import { PG_URL, postgresReachable } from '../lib/postgres.js'
import { steadyRss } from '../lib/proc.js'
import { waitForEvents } from '../lib/shared.js'

const count = Number(process.argv[2] ?? 10_000)
const snapshots = process.argv[3] ? resolve(process.argv[3]) : undefined
const dir = mkdtempSync(join(tmpdir(), 'session-memory-'))
const pg = await postgresReachable(PG_URL)
const db = pg ? await freshPostgres(PG_URL) : undefined
const creds = makeCreds(count)
const ours = await startOurs({
  dataDir: mkdtempSync(join(dir, 'ours-')),
  databaseUrl: db?.url,
  execArgv: ['--expose-gc', '--max-semi-space-size=1'],
})
const fleet = await startFleet()
const mib = (b: number) => (b / 2 ** 20).toFixed(1)

/** Resident memory by kind: anonymous (heaps, malloc) vs file-backed (code, mapped libraries). */
function rollup(pid: number): Record<string, number> {
  const out: Record<string, number> = {}
  for (const line of readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').split('\n')) {
    const m = /^(Rss|Anonymous|Pss_Anon|Pss_File|Pss_Shmem):\s+(\d+) kB/.exec(line)
    if (m) out[m[1]!] = Number(m[2]) * 1024
  }
  return out
}

async function reading(label: string) {
  const rss = await steadyRss(ours.pid, ours)
  const m = await ours.call<NodeJS.MemoryUsage>('memory')
  const r = rollup(ours.pid)
  console.log(
    `${label}: RSS ${mib(rss)} MiB (anonymous ${mib(r.Anonymous ?? 0)}, file-backed ${mib(r.Pss_File ?? 0)} PSS); V8 heap used ${mib(m.heapUsed)} of ${mib(m.heapTotal)}, external ${mib(m.external)} (array buffers ${mib(m.arrayBuffers)})`,
  )
  if (snapshots) await ours.call('heapSnapshot', { file: join(snapshots, `${label}.heapsnapshot`) }, 600_000)
  return { rss, live: m.heapUsed + m.external }
}

try {
  await ours.call('seed', { file: writeCreds(dir, 'creds', creds) }, 600_000)
  console.log(`${pg ? 'PostgreSQL' : 'PGlite'}, ${count} devices`)
  const idle = await reading('idle')
  if (count > 0) {
    const since = Date.now() - 1000
    const r = await fleet.connect({
      port: ours.mqttPort,
      creds,
      clean: false,
      subscribe: [deviceFilter('{id}', '#')],
      concurrency: 200,
      localAddresses: sourceAddresses(8, Math.floor(Math.random() * 200)),
    })
    if (r.failed) throw new Error(`${r.failed} devices failed: ${JSON.stringify(r.codes)}`)
    await waitForEvents(ours, 'device.connected', since, count, 300_000)
    const busy = await reading('sessions')
    console.log(
      `per session: RSS ${((busy.rss - idle.rss) / count / 1024).toFixed(2)} KiB, V8 heap used + external ${((busy.live - idle.live) / count / 1024).toFixed(2)} KiB`,
    )
  }
} finally {
  await ours.stop({ graceful: false })
  await fleet.stop()
  await db?.drop()
}
