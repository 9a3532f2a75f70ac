// The real entry point, as `npm start` runs it: src/server.ts bundled into dist/ and run by node, in its
// own process, so a test can stop it the way an operator or a crash would (SIGTERM, SIGKILL).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { copyPgliteTemplate, TEST_SHARED_BUFFERS } from './app.js'

type Tap = { teardown(fn: () => unknown): void }

type Run = { code: number | null; signal: NodeJS.Signals | null; output: string }

export type ServiceProcess = {
  child: ChildProcess
  exited: Promise<Run>
  /** Also waits for stdio to drain, so `output` is complete. */
  closed: Promise<Run>
  /** Resolves with the first match of `re` in the output; rejects if the process exits first. */
  waitFor(re: RegExp): Promise<string>
  readonly output: string
}

const root = new URL('../..', import.meta.url).pathname

/**
 * The database and Redis settings a child service should use: a fresh PostgreSQL database
 * (dropped when the test ends) and its own Redis prefix when the suite runs against them,
 * nothing (PGlite in DATA_DIR) otherwise.
 *
 * Given the child's (empty) `dataDir`, the embedded database starts as a copy of the migrated
 * template with the test apps' page cache, as startApp's apps do: initdb and every migration in
 * WebAssembly cost the child about 2.8 s of CPU more at its first start (5.5 to 6 s against
 * about 3 s, measured 2026-11-29). server.test.ts passes none: it is the check that the service
 * starts on a fresh folder, as after `npm ci`.
 */
export async function childBacking(t: Tap, dataDir?: string): Promise<Record<string, string>> {
  const backing: Record<string, string> = {}
  if (dataDir && !process.env.DATABASE_URL) {
    await copyPgliteTemplate(dataDir)
    backing.PGLITE_SHARED_BUFFERS = TEST_SHARED_BUFFERS
  }
  if (process.env.DATABASE_URL) {
    const name = `t_${randomBytes(6).toString('hex')}`
    const admin = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} })
    await admin.unsafe(`CREATE DATABASE ${name}`)
    await admin.end()
    t.teardown(async () => {
      const drop = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
      await drop.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
      await drop.end()
    })
    const u = new URL(process.env.DATABASE_URL)
    u.pathname = `/${name}`
    backing.DATABASE_URL = u.toString()
  }
  if (process.env.REDIS_URL) {
    backing.REDIS_URL = process.env.REDIS_URL
    backing.REDIS_PREFIX = `test:${randomBytes(6).toString('hex')}:`
  }
  return backing
}

function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    // The child is configured here only: no inherited service settings, no tap plumbing.
    if (/^(DATABASE_URL|REDIS_URL|REDIS_PREFIX|PORT|HOST|BASE_URL|DATA_DIR|NODE_OPTIONS|TAP.*|_TAP.*)$/.test(k)) continue
    env[k] = v
  }
  const out: Record<string, string> = { ...env, HOST: '127.0.0.1', LOG_LEVEL: 'info', MQTT_PORT: '0', ...extra }
  // An empty value in `extra` leaves the variable unset (its default applies).
  for (const [k, v] of Object.entries(extra)) if (v === '') delete out[k]
  return out
}

let built: string | undefined

/**
 * The service as `npm start` runs it: bundled by scripts/build.mjs and run by plain node. Built
 * once per test process, into a folder of its own (test files run in parallel), removed at exit.
 */
function builtServer(): string {
  if (built) return built
  const outdir = join('dist', `.test-${process.pid}`)
  execFileSync(process.execPath, ['scripts/build.mjs', '--outdir', outdir, 'src/server.ts'], { cwd: root, stdio: 'pipe' })
  process.once('exit', () => rmSync(join(root, outdir), { recursive: true, force: true }))
  built = join(outdir, 'server.js')
  return built
}

/**
 * Starts the service. It runs in its own process group, so the teardown can stop it and anything
 * it started; plain node on the built bundle, as `npm start` runs it, rather than through npm,
 * whose shell does not pass every signal on.
 */
export function startServiceProcess(t: Tap, env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [builtServer()], {
    cwd: root,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  const waiters: Array<() => void> = []
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8')
    for (const w of waiters) w()
  }
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  const exited = new Promise<Run>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, output })))
  const closed = new Promise<Run>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, output })))
  const waitFor = (re: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const m = output.match(re)
        if (m) resolve(m[0])
      }
      waiters.push(check)
      check()
      void exited.then((r) => reject(new Error(`server exited (${r.code ?? r.signal}) before ${re}:\n${output}`)))
    })
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(-child.pid, 'SIGKILL')
  })
  return {
    child,
    exited,
    closed,
    waitFor,
    get output() {
      return output
    },
  }
}
