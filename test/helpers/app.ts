// Builds the real app for a test file: its own data folder and migrated database (a fresh
// PostgreSQL database when DATABASE_URL is set), its own Redis key prefix when REDIS_URL is set,
// listening on a free loopback port; the helpers call it by inject unless `sockets` is set.
import { randomBytes } from 'node:crypto'
import { execFile } from 'node:child_process'
import { cpSync } from 'node:fs'
import { mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { migrationsFolder, openDatabase, type DatabaseHandle } from '../../src/db/client.js'
import { registerApp } from './app-fetch.js'

const execFileAsync = promisify(execFile)

type Tap = { teardown(fn: () => unknown): void }

export type TestApp = {
  app: FastifyInstance
  config: Config
  /** http://127.0.0.1:PORT */
  url: string
  dataDir: string
  close(): Promise<void>
}

/**
 * A port that is free now, for a service that must know its own address before it listens.
 * Picked below the kernel's ephemeral range: a port from listen(0) sits in that range, where any
 * outgoing connection of a parallel test file (PostgreSQL, MQTT clients) may take it in the
 * seconds before the app binds it; below it only another explicit pick can, one in thousands.
 */
export async function freePort(): Promise<number> {
  const low = await ephemeralLow()
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000))
    if (await canListen(port)) return port
  }
  throw new Error('no free port below the ephemeral range')
}

async function ephemeralLow(): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768 60999')
  const low = Number(range.trim().split(/\s+/)[0])
  return Number.isInteger(low) && low > 11_000 ? low : 32_768
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.unref()
    srv.once('error', () => resolve(false))
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)))
  })
}

/** A fresh database on the machine's PostgreSQL, dropped when the test file ends. */
export async function freshPostgres(t: Tap, baseUrl: string): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`
  const admin = postgres(baseUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  t.teardown(async () => {
    const drop = postgres(baseUrl, { max: 1, onnotice: () => {} })
    await drop.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
    await drop.end()
  })
  const u = new URL(baseUrl)
  u.pathname = `/${name}`
  return u.toString()
}

/**
 * A migrated PGlite database to copy for each test: creating and migrating one costs seconds
 * (initdb in WebAssembly), copying it a fraction of that. Keyed by the migrations, built once per
 * machine; concurrent test processes race safely (build aside, then rename).
 */
async function pgliteTemplate(): Promise<string> {
  const hash = createHash('sha256')
  for (const name of (await readdir(migrationsFolder)).sort()) {
    if (name.endsWith('.sql')) hash.update(name).update(await readFile(join(migrationsFolder, name)))
  }
  const dir = join(tmpdir(), `dps-pglite-template-${hash.digest('hex').slice(0, 16)}`)
  const ready = async () =>
    stat(join(dir, 'ready')).then(
      () => true,
      () => false,
    )
  if (await ready()) return dir
  const work = await mkdtemp(join(tmpdir(), 'dps-pglite-build-'))
  const db = openDatabase({ dataDir: work })
  await db.migrate()
  await db.close()
  await writeFile(join(work, 'ready'), '')
  await rename(work, dir).catch(async () => {
    // Another process finished first; use theirs.
    await rm(work, { recursive: true, force: true })
  })
  if (!(await ready())) throw new Error(`could not prepare the PGlite template in ${dir}`)
  return dir
}

/**
 * Copies the template's 1,150 files. Node's promise-based fs.cp cost about 0.9 s of CPU per app
 * start under tap (a promise per file, each tracked by tap's async hooks); the system's cp
 * about 0.1 s, outside the test process. fs.cpSync where there is no cp.
 */
async function copyTree(from: string, to: string): Promise<void> {
  try {
    await execFileAsync('cp', ['-R', from, to])
  } catch {
    cpSync(from, to, { recursive: true, force: true })
  }
}

/**
 * A copy of the migrated PGlite template as `dataDir`'s database (what startApp gives each app):
 * for a test that starts the service some other way, such as in a process of its own.
 */
export async function copyPgliteTemplate(dataDir: string): Promise<void> {
  await copyTree(join(await pgliteTemplate(), 'pglite'), join(dataDir, 'pglite'))
}

/**
 * The embedded database's page cache for test apps: PostgreSQL zeroes it at every start, and a
 * test database holds a few MiB. 32MB (the default) cost about 0.15 s of CPU more per PGlite start
 * than 4MB; tests that care set PGLITE_SHARED_BUFFERS themselves.
 */
export const TEST_SHARED_BUFFERS = '4MB'

export type StartOptions = {
  env?: Record<string, string>
  /** The scheduler's clock (tests move it instead of waiting). */
  clock?: () => Date
  /** Reuse a data folder and database (to restart the "same" service). */
  reuse?: { dataDir: string; databaseUrl?: string; redisPrefix?: string }
  /** An empty folder (the caller's, and the caller removes it) to use as DATA_DIR. */
  dataDir?: string
  /**
   * Every call over a real socket, for a file whose subject is the socket (streaming, body limits
   * over the wire, draining); otherwise the helpers call this app by inject (test/helpers/app-fetch.ts).
   */
  sockets?: boolean
}

export async function startApp(t: Tap, opts: StartOptions = {}): Promise<TestApp> {
  const dataDir = opts.reuse?.dataDir ?? opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'dps-test-')))
  if (!opts.reuse && !opts.dataDir) t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const env: Record<string, string | undefined> = {
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    MQTT_PORT: '0',
    // Generous limits: only the rate-limit tests exercise the defaults.
    RATE_LIMIT_MAX: '100000',
    RATE_LIMIT_AUTH_MAX: '100000',
    PGLITE_SHARED_BUFFERS: TEST_SHARED_BUFFERS,
  }
  // A blank DATABASE_URL or REDIS_URL in `opts.env` asks for the embedded default whatever the suite runs on.
  if (process.env.DATABASE_URL && opts.env?.DATABASE_URL !== '') {
    env.DATABASE_URL = opts.reuse?.databaseUrl ?? (await freshPostgres(t, process.env.DATABASE_URL))
  } else if (!opts.reuse && !opts.env?.DATABASE_URL) {
    await copyPgliteTemplate(dataDir)
  }
  if (process.env.REDIS_URL) {
    env.REDIS_URL = process.env.REDIS_URL
    env.REDIS_PREFIX = opts.reuse?.redisPrefix ?? `test:${randomBytes(6).toString('hex')}:`
  }
  Object.assign(env, opts.env)
  // A given PORT (with MQTT_PORT) restarts a service where its clients expect it.
  const fixed = opts.env?.PORT ? Number(opts.env.PORT) : undefined
  const baseUrl = env.BASE_URL
  for (let attempt = 1; ; attempt++) {
    const port = fixed ?? (await freePort())
    env.PORT = String(port)
    env.BASE_URL = baseUrl ?? `http://127.0.0.1:${port}`
    const config = loadConfig(env)
    const app = await buildApp(config, { clock: opts.clock })
    let closed = false
    const close = async () => {
      if (closed) return
      closed = true
      await app.close()
    }
    // Before listen: a failed listen must still close the broker and database the app opened.
    t.teardown(close)
    // Before listen too: registering adds a hook, which a started app no longer takes.
    if (!opts.sockets) registerApp(`http://127.0.0.1:${port}`, app)
    try {
      await app.listen({ port, host: '127.0.0.1' })
    } catch (err) {
      // Another parallel file took the picked port between the check and the bind: pick again.
      if ((err as { code?: string }).code !== 'EADDRINUSE' || fixed !== undefined || attempt >= 5) throw err
      await close()
      continue
    }
    return { app, config, url: `http://127.0.0.1:${port}`, dataDir, close }
  }
}

/**
 * A migrated database alone, without the app, for tests of a domain's rules and repositories:
 * a copy of the PGlite template, or a fresh PostgreSQL database when DATABASE_URL is set.
 * Closed when the test ends.
 */
export async function testDatabase(t: Tap): Promise<DatabaseHandle> {
  const dataDir = await mkdtemp(join(tmpdir(), 'dps-db-'))
  const databaseUrl = process.env.DATABASE_URL ? await freshPostgres(t, process.env.DATABASE_URL) : undefined
  if (!databaseUrl) await copyPgliteTemplate(dataDir)
  const handle = openDatabase({ databaseUrl, dataDir, pgliteSharedBuffers: TEST_SHARED_BUFFERS })
  t.teardown(async () => {
    await handle.close()
    await rm(dataDir, { recursive: true, force: true })
  })
  await handle.migrate()
  return handle
}
