// The real entry point, as `npm start` runs it, in its own process (test/helpers/child.ts):
// npm exec would run it through a shell that does not pass SIGTERM on.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './helpers/app.js'
import { childBacking, startServiceProcess } from './helpers/child.js'
import { makeClient, signUp, uniqueEmail } from './helpers/client.js'
import { pairDevice } from './helpers/devices.js'
import { uploadPng } from './helpers/uploads.js'
import { appFetch } from './helpers/app-fetch.js'

let dataDir: string
/** The database and Redis settings for the child: a fresh database in PostgreSQL mode. */
let backing: Record<string, string> = {}

t.before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'dps-server-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  backing = await childBacking(t)
})

/** Starts `src/server.ts`; `ready` resolves when `until` matches the output. */
function startServer(env: Record<string, string>, until?: RegExp) {
  const srv = startServiceProcess(t, { DATA_DIR: dataDir, ...backing, ...env })
  return { ...srv, ready: until ? srv.waitFor(until) : Promise.resolve('') }
}

t.test('starts, logs its real address, serves, and exits 0 on SIGTERM', async (t) => {
  const port = await freePort()
  const srv = startServer({ PORT: String(port), DEVICE_POLL_INTERVAL: '0' }, /HTTP listening on http:\/\/127\.0\.0\.1:(\d+)/)
  const line = await srv.ready
  t.match(line, `HTTP listening on http://127.0.0.1:${port}`, 'logs the address it listens on')
  const mqtt = await srv.waitFor(/MQTT listening on mqtt:\/\/[^:]+:(\d+)/)
  const mqttPort = Number(mqtt.split(':').pop())
  t.match(mqtt, /^MQTT listening on mqtt:\/\/127\.0\.0\.1:\d+$/, 'logs the MQTT listener on the bound host')
  t.ok(mqttPort > 0, 'MQTT_PORT=0 is logged as the port the system picked')
  t.match(
    await srv.waitFor(/MQTT over WebSocket on \S+/),
    `MQTT over WebSocket on ws://localhost:${port}/mqtt`,
    'the public URL names a loopback HOST localhost',
  )
  const used = await srv.waitFor(/\(database: [^)]*\)/)
  t.equal(used, process.env.DATABASE_URL ? '(database: postgres, redis)' : '(database: pglite)', 'on the configured database')

  const ok = await appFetch(`http://127.0.0.1:${port}/ok`)
  t.equal(ok.status, 200, 'the started service answers')
  t.same(await ok.json(), { ok: true })
  const session = await appFetch(`http://127.0.0.1:${port}/get-session`)
  t.equal(session.status, 401)
  t.equal(((await session.json()) as { code: string }).code, 'UNAUTHORIZED')

  // A picture sent to a display is converted by the bundle's worker thread (dist/convert-worker.js).
  // The public URL (BASE_URL) is localhost: the origin Better Auth expects of the client.
  const base = `http://localhost:${port}`
  const { token } = await signUp(makeClient(base).client, uniqueEmail('server'))
  const dev = await pairDevice({ url: base }, token)
  const key = await uploadPng(base, token, '#336699')
  const sent = await appFetch(`${base}/api/upload/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key, deviceId: dev.deviceId }),
  })
  t.equal(sent.status, 200, 'an upload is converted and sent to a device')
  t.equal(((await sent.json()) as { image: { format: string } }).image.format, 'bmp1', 'as the 1-bit BMP its display takes')

  srv.child.kill('SIGTERM')
  const run = await srv.closed
  t.equal(run.code, 0, 'exit code 0 after SIGTERM')
  t.match(run.output, /SIGTERM received, shutting down/)
  t.notMatch(run.output, /"level":(50|60)/, 'no error or fatal log lines')
  await t.rejects(appFetch(`http://127.0.0.1:${port}/ok`), 'the port is released')
})

t.test('LOG_FORMAT=pretty: one readable line per entry (what a terminal gets by default)', async (t) => {
  const port = await freePort()
  const srv = startServer({ PORT: String(port), LOG_FORMAT: 'pretty' }, /public URL/)
  await srv.ready
  srv.child.kill('SIGTERM')
  const run = await srv.closed
  t.equal(run.code, 0)
  t.match(run.output, /\[\d\d:\d\d:\d\d(\.\d+)?\] INFO: HTTP listening on http:\/\/127\.0\.0\.1:\d+/, 'time, level and message, no JSON')
  t.notMatch(run.output, /\{"level":30/)
})

t.test('Ctrl-C (SIGINT) shuts down cleanly too', async (t) => {
  const port = await freePort()
  const srv = startServer({ PORT: String(port) }, /public URL/)
  await srv.ready
  t.equal((await appFetch(`http://127.0.0.1:${port}/ok`)).status, 200)
  srv.child.kill('SIGINT')
  const run = await srv.closed
  t.equal(run.code, 0, 'exit code 0 after SIGINT')
  t.match(run.output, /SIGINT received, shutting down/)
  t.notMatch(run.output, /"level":(50|60)/, 'no error or fatal log lines')
})

t.test('MQTT_PORT left at its default beside another broker on 1883: the next free port, said in the log', async (t) => {
  // Mosquitto holds 1883 on this machine and in CI; where nothing does, this test holds it.
  const blocker: Server = createServer()
  await new Promise<void>((resolve) => {
    blocker.once('error', () => resolve())
    blocker.listen(1883, '127.0.0.1', () => {
      t.teardown(() => new Promise<void>((done) => blocker.close(() => done())))
      resolve()
    })
  })
  const port = await freePort()
  const srv = startServer({ PORT: String(port), MQTT_PORT: '' }, /public URL/)
  await srv.ready
  const line = await srv.waitFor(/MQTT port 1883 is in use[^"]*/)
  const taken = Number(/listening on (\d+) instead/.exec(line)?.[1])
  t.ok(taken > 1883 && taken <= 1899, `it took ${taken}`)
  t.match(line, /Set MQTT_PORT to choose a port/)
  t.match(await srv.waitFor(/MQTT listening on mqtt:\/\/\S+/), `MQTT listening on mqtt://127.0.0.1:${taken}`)
  srv.child.kill('SIGTERM')
  t.equal((await srv.closed).code, 0)
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

t.test('NODE_ENV=production without AUTH_SECRET or BASE_URL: exits 78 naming each, no stack trace', async (t) => {
  const port = await freePort()
  const run = await startServer({ PORT: String(port), NODE_ENV: 'production', AUTH_SECRET: '', BASE_URL: '' }).closed
  t.equal(run.code, 78, 'EX_CONFIG')
  t.match(run.output, /Refusing to start with NODE_ENV=production/)
  t.match(run.output, /AUTH_SECRET is not set/)
  t.match(run.output, /BASE_URL is not set/)
  t.notMatch(run.output, /^\s+at /m, 'no stack trace')
  t.notMatch(run.output, /HTTP listening on/)
  await t.rejects(appFetch(`http://127.0.0.1:${port}/ok`), 'nothing listens')
})

t.test('NODE_ENV=production with the checklist short of SMTP: starts, warns, and takes SIGHUP without exiting', async (t) => {
  const port = await freePort()
  // A data folder and database of its own: the shared ones' stored keys are sealed with the generated
  // AUTH_SECRET. Copied from the migrated template (no keys in it yet): the first test above is the
  // start on an empty folder.
  const own = await mkdtemp(join(tmpdir(), 'dps-server-prod-'))
  t.teardown(() => rm(own, { recursive: true, force: true }))
  const srv = startServiceProcess(t, {
    ...(await childBacking(t, own)),
    PORT: String(port),
    DATA_DIR: own,
    NODE_ENV: 'production',
    AUTH_SECRET: randomBytes(32).toString('base64url'),
    BASE_URL: 'https://frames.example.com',
    SMTP_URL: '',
  })
  await srv.waitFor(/public URL/)
  t.match(await srv.waitFor(/production checklist: SMTP_URL is not set[^"]*/), /only written to DATA_DIR\/outbox/)
  srv.child.kill('SIGHUP')
  await srv.waitFor(/SIGHUP received: nothing to reload/)
  t.equal((await appFetch(`http://127.0.0.1:${port}/ok`)).status, 200, 'still serving after SIGHUP')
  srv.child.kill('SIGTERM')
  const run = await srv.closed
  t.equal(run.code, 0)
})
