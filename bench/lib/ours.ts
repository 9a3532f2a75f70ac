// Starts our service (bench/servers/ours.ts) in a child process on loopback with a temporary
// DATA_DIR: embedded defaults (PGlite, in-process broker) unless a database or Redis URL is given.
import { execFileSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { startChild, type Child } from './child.js'
import { freePort } from './ports.js'

export type Cred = { id: string; secret: string }
export type Ours = Child & { url: string; httpPort: number; mqttPort: number; dataDir: string }

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

let built: string | undefined
/**
 * Our server as `npm start` runs the service: bundled by scripts/build.mjs and run by plain node
 * (no TypeScript loader in the measured process). Built once per benchmark run.
 */
function server(): string {
  if (!built) {
    execFileSync(process.execPath, ['scripts/build.mjs', '--outdir', 'dist/bench', 'bench/servers/ours.ts'], {
      cwd: ROOT,
      stdio: 'inherit',
    })
    built = join(ROOT, 'dist', 'bench', 'ours.js')
  }
  return built
}

/** Device ids and 256-bit secrets, as pairing would issue them. */
export function makeCreds(n: number): Cred[] {
  return Array.from({ length: n }, () => ({ id: randomUUID(), secret: randomBytes(32).toString('base64url') }))
}

export function writeCreds(dir: string, name: string, creds: Cred[]): string {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify(creds))
  return file
}

export type OursOptions = {
  dataDir: string
  env?: Record<string, string>
  databaseUrl?: string
  redisUrl?: string
  /** Node flags for the server process (e.g. --expose-gc for memory readings). */
  execArgv?: string[]
  /** The HTTP port, when something must know it before the service starts (RabbitMQ's auth backend). */
  port?: number
  /** The soft open-files limit to raise the process to (a cluster instance holds ~19,000 sockets). */
  openFiles?: number
}

export async function startOurs(opts: OursOptions): Promise<Ours> {
  const port = opts.port ?? (await freePort())
  const env: Record<string, string | undefined> = { ...process.env }
  // Embedded defaults unless this run asks for PostgreSQL/Redis explicitly.
  delete env.DATABASE_URL
  delete env.REDIS_URL
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    BASE_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: opts.dataDir,
    MQTT_PORT: '0',
    LOG_LEVEL: 'error',
    // The per-address connection-rate limit would refuse a benchmark's burst from one machine.
    MQTT_CONNECT_RATE: '0',
    RATE_LIMIT_MAX: '1000000000',
    RATE_LIMIT_AUTH_MAX: '1000000000',
    DEVICE_POLL_INTERVAL: '0',
    ...(opts.databaseUrl ? { DATABASE_URL: opts.databaseUrl } : {}),
    ...(opts.redisUrl ? { REDIS_URL: opts.redisUrl, REDIS_PREFIX: `bench:${randomBytes(4).toString('hex')}:` } : {}),
    ...opts.env,
  })
  const child = await startChild(server(), { env, execArgv: opts.execArgv, readyTimeoutMs: 120_000, openFiles: opts.openFiles })
  return Object.assign(child, {
    url: `http://127.0.0.1:${port}`,
    httpPort: port,
    mqttPort: child.ready.mqttPort as number,
    dataDir: opts.dataDir,
  })
}

/** A fresh PostgreSQL database on the server of `baseUrl`; drop() removes it. */
export async function freshPostgres(baseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `bench_${randomBytes(6).toString('hex')}`
  const admin = postgres(baseUrl, { max: 1, onnotice: () => {}, connect_timeout: 3 })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  const u = new URL(baseUrl)
  u.pathname = `/${name}`
  return {
    url: u.toString(),
    async drop() {
      const a = postgres(baseUrl, { max: 1, onnotice: () => {} })
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
      await a.end()
    },
  }
}
