// The real entry point, as `npm start` runs it: tsx on src/server.ts in its own process.
// The tsx binary is spawned directly (what `npx tsx` resolves to): npm exec runs it through a
// shell and does not pass SIGTERM on, so the signal would never reach the server.
import t from 'tap'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { freePort } from './helpers/app.js'

type Run = { code: number | null; signal: NodeJS.Signals | null; output: string }

const root = new URL('..', import.meta.url).pathname
let dataDir: string
/** The database and Redis settings for the child: a fresh database in PostgreSQL mode. */
const backing: Record<string, string> = {}

t.before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'dps-server-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
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
})

function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) {
    // The child is configured here only: no inherited service settings, no tap plumbing.
    if (/^(DATABASE_URL|REDIS_URL|REDIS_PREFIX|PORT|HOST|BASE_URL|DATA_DIR|NODE_OPTIONS|TAP.*|_TAP.*)$/.test(k)) continue
    env[k] = v
  }
  return { ...env, HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', MQTT_PORT: '0', ...backing, ...extra }
}

/** Starts `tsx src/server.ts`; `ready` resolves when `until` matches the output. */
function startServer(env: Record<string, string>, until?: RegExp) {
  // Its own process group, so the teardown can stop tsx and the node process it starts.
  // node with tsx's loader, not the tsx CLI: the CLI is a parent process that relays signals to
  // its child, and a relayed SIGINT was once lost (exit 130, our handler never ran).
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: root,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  let onOutput = () => {}
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8')
    onOutput()
  }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  const exited = new Promise<Run>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, output })))
  // Wait for stdio to drain as well, so `output` is complete.
  const closed = new Promise<Run>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, output })))
  const waiters: Array<() => void> = []
  onOutput = () => waiters.forEach((w) => w())
  /** Resolves with the first match of `re` in the output; rejects if the server exits first. */
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
  const ready = until ? waitFor(until) : Promise.resolve('')
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(-child.pid, 'SIGKILL')
  })
  return { child, ready, exited, closed, waitFor }
}

t.test('starts, logs its real address, serves, and exits 0 on SIGTERM', async (t) => {
  const port = await freePort()
  const srv = startServer({ PORT: String(port) }, /HTTP listening on http:\/\/127\.0\.0\.1:(\d+)/)
  const line = await srv.ready
  t.match(line, `HTTP listening on http://127.0.0.1:${port}`, 'logs the address it listens on')
  const mqtt = await srv.waitFor(/MQTT listening on mqtt:\/\/[^:]+:(\d+)/)
  const mqttPort = Number(mqtt.split(':').pop())
  t.match(mqtt, /^MQTT listening on mqtt:\/\/127\.0\.0\.1:\d+$/, 'logs the MQTT listener on the bound host')
  t.ok(mqttPort > 0, 'MQTT_PORT=0 is logged as the port the system picked')
  t.match(await srv.waitFor(/MQTT over WebSocket on \S+/), `MQTT over WebSocket on ws://127.0.0.1:${port}/mqtt`)
  const used = await srv.waitFor(/\(database: [^)]*\)/)
  t.equal(used, process.env.DATABASE_URL ? '(database: postgres, redis)' : '(database: pglite)', 'on the configured database')

  const ok = await fetch(`http://127.0.0.1:${port}/ok`)
  t.equal(ok.status, 200, 'the started service answers')
  t.same(await ok.json(), { ok: true })
  const session = await fetch(`http://127.0.0.1:${port}/get-session`)
  t.equal(session.status, 401)
  t.equal(((await session.json()) as { code: string }).code, 'UNAUTHORIZED')

  srv.child.kill('SIGTERM')
  const run = await srv.closed
  t.equal(run.code, 0, 'exit code 0 after SIGTERM')
  t.match(run.output, /SIGTERM received, shutting down/)
  t.notMatch(run.output, /"level":(50|60)/, 'no error or fatal log lines')
  await t.rejects(fetch(`http://127.0.0.1:${port}/ok`), 'the port is released')
})

t.test('Ctrl-C (SIGINT) shuts down cleanly too', async (t) => {
  const port = await freePort()
  const srv = startServer({ PORT: String(port) }, /public URL/)
  await srv.ready
  t.equal((await fetch(`http://127.0.0.1:${port}/ok`)).status, 200)
  srv.child.kill('SIGINT')
  const run = await srv.closed
  t.equal(run.code, 0, 'exit code 0 after SIGINT')
  t.match(run.output, /SIGINT received, shutting down/)
  t.notMatch(run.output, /"level":(50|60)/, 'no error or fatal log lines')
})

t.test('with the HTTP port taken it exits non-zero naming PORT', async (t) => {
  const port = await freePort()
  const blocker: Server = createServer()
  await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())))

  const run = await startServer({ PORT: String(port) }).closed
  t.not(run.code, 0, `exit code ${run.code} is non-zero`)
  t.not(run.code, null, 'it exited on its own, not by a signal')
  t.match(run.output, new RegExp(`port ${port} is already in use`), 'says which port is taken')
  t.match(run.output, /set PORT/, 'names the PORT variable')
  t.notMatch(run.output, /HTTP listening on/)
})

t.test('an invalid configuration exits non-zero naming the variable', async (t) => {
  const run = await startServer({ PORT: 'not-a-port' }).closed
  t.equal(run.code, 78, 'EX_CONFIG')
  t.match(run.output, /Invalid configuration/)
  t.match(run.output, /PORT/)
  t.notMatch(run.output, /HTTP listening on/)
})
