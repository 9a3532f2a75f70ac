// get-session: GET /get-session (ours: the interface's snake_case records, user row read fresh)
// against GET /api/auth/get-session (Better Auth's own handler) on the same app, the same
// database and the same session token, 50 concurrent connections (autocannon), on the embedded
// PGlite and on PostgreSQL + Redis (skipped with a note when they are not reachable).
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { Redis } from 'ioredis'
import { alternate, type Context, type Scenario } from '../lib/context.js'
import { freshPostgres, startOurs, type Ours } from '../lib/ours.js'
import { cpuSeconds } from '../lib/proc.js'
import type { Metric, ScenarioResult } from '../lib/report.js'
import { OURS_BENCH_ENV, sharedOurs } from '../lib/shared.js'

const PG_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
const REDIS_URL = 'redis://127.0.0.1:6379'

async function reachable(): Promise<{ pg: boolean; redis: boolean }> {
  const sql = postgres(PG_URL, { max: 1, connect_timeout: 2, onnotice: () => {} })
  const pg = await sql`select 1`.then(
    () => true,
    () => false,
  )
  await sql.end({ timeout: 1 }).catch(() => {})
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, retryStrategy: () => null, maxRetriesPerRequest: 0 })
  client.on('error', () => {})
  const redis = await client.connect().then(
    async () => (await client.ping()) === 'PONG',
    () => false,
  )
  client.disconnect()
  return { pg, redis }
}

type Run = { rps: number; p99: number; p50: number; errors: number; non2xx: number; requests: number; cpuUsPerRequest: number }

async function load(ours: Ours, path: string, token: string, seconds: number): Promise<Run> {
  const cpu0 = cpuSeconds(ours.pid)
  const r = await autocannon({
    url: `${ours.url}${path}`,
    connections: 50,
    duration: seconds,
    headers: { authorization: `Bearer ${token}` },
  })
  const cpu = cpuSeconds(ours.pid) - cpu0
  const requests = r.requests.total
  return {
    rps: requests / seconds,
    p99: r.latency.p99,
    p50: r.latency.p50,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    requests,
    cpuUsPerRequest: (cpu / Math.max(1, requests)) * 1e6,
  }
}

async function measure(ctx: Context, ours: Ours, label: string) {
  const seconds = ctx.quick ? 2 : 5
  const rounds = ctx.quick ? 2 : 3
  const { token } = await ours.call<{ token: string }>('session')
  // Both paths must answer 200 for this session before anything is timed.
  for (const path of ['/get-session', '/api/auth/get-session']) {
    const res = await fetch(`${ours.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
    const body = (await res.json()) as { user?: { id?: string } } | null
    if (res.status !== 200 || !body?.user?.id) throw new Error(`${path} answered ${res.status} ${JSON.stringify(body)}`)
  }
  // Warm-up: JIT and connection pools.
  await load(ours, '/get-session', token, 1)
  await load(ours, '/api/auth/get-session', token, 1)
  const runs: Record<'ours' | 'peer', Run[]> = { ours: [], peer: [] }
  const one = async (side: 'ours' | 'peer', round: number) => {
    const r = await load(ours, side === 'ours' ? '/get-session' : '/api/auth/get-session', token, seconds)
    if (r.non2xx || r.errors) throw new Error(`${label} ${side}: ${r.non2xx} non-2xx answers, ${r.errors} errors`)
    runs[side].push(r)
    ctx.log(`get-session ${label} ${side} round ${round + 1}: ${Math.round(r.rps)} req/s, p99 ${r.p99} ms`)
  }
  await alternate(
    rounds,
    (r) => one('ours', r),
    (r) => one('peer', r),
  )
  const metric = (name: string, better: Metric['better'], f: (r: Run) => number): Metric => ({
    name: `${name} (${label})`,
    better,
    ours: runs.ours.map(f),
    peer: runs.peer.map(f),
  })
  return {
    rounds,
    seconds,
    runs,
    metrics: [
      metric('requests/s', 'higher', (r) => r.rps),
      metric('latency p99 ms', 'lower', (r) => r.p99),
      metric('server CPU µs/request', 'lower', (r) => r.cpuUsPerRequest),
    ],
  }
}

export const getSession: Scenario = {
  name: 'get-session',
  summary: 'GET /get-session vs Better Auth GET /api/auth/get-session, 50 connections, PGlite and PostgreSQL + Redis',
  uses: ['ours'],
  prepare: sharedOurs,
  async run(ctx): Promise<ScenarioResult> {
    const notes = [
      "Same app process, same database, same session (Authorization: Bearer); autocannon with 50 connections in the benchmark process. Peer = Better Auth 1.7.25's own GET /api/auth/get-session as mounted in this app.",
      'Server CPU: the app process only (not PostgreSQL or Redis).',
    ]
    const embedded = await measure(ctx, await sharedOurs(ctx), 'PGlite')
    const metrics = [...embedded.metrics]
    const details: Record<string, unknown> = { pglite: embedded.runs, seconds: embedded.seconds }
    const { pg, redis } = ctx.quick ? { pg: false, redis: false } : await reachable()
    if (ctx.quick)
      notes.push(
        '--quick measures PGlite only (starting a second service would not fit in its time); the full run adds PostgreSQL + Redis.',
      )
    else if (pg && redis) {
      const db = await freshPostgres(PG_URL)
      const ours = await startOurs({
        dataDir: mkdtempSync(join(ctx.workDir, 'get-session-pg-')),
        databaseUrl: db.url,
        redisUrl: REDIS_URL,
        env: OURS_BENCH_ENV,
      })
      try {
        const m = await measure(ctx, ours, 'PostgreSQL + Redis')
        metrics.push(...m.metrics)
        details.postgresRedis = m.runs
      } finally {
        await ours.stop({ graceful: true })
        await db.drop()
      }
    } else {
      notes.push(
        `PostgreSQL + Redis skipped: PostgreSQL ${pg ? 'reachable' : 'not reachable'} at ${PG_URL}, Redis ${redis ? 'reachable' : 'not reachable'} at ${REDIS_URL}.`,
      )
    }
    return {
      scenario: 'get-session',
      ours: 'GET /get-session',
      peer: 'Better Auth GET /api/auth/get-session',
      rounds: embedded.rounds,
      metrics,
      notes,
      details,
    }
  },
}
