// Nodes on one Redis prefix form a cluster and must share the database, the object store,
// AUTH_SECRET and the firmware signing key. A node that does not is refused at start with a message naming what to fix,
// instead of starting and then failing sessions, keys or images in ways nobody can trace.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { newSigningKeyPem } from '../../src/firmware/signing.js'
import { freshPostgres, startApp } from '../helpers/app.js'
import { startServiceProcess } from '../helpers/child.js'
import { postgresUrl, redisUrl } from '../helpers/services.js'
import { appFetch } from '../helpers/app-fetch.js'

const redis = await redisUrl()
const postgres = await postgresUrl()
const skip = !redis ? 'no Redis reachable (set REDIS_URL)' : !postgres ? 'no PostgreSQL reachable (set DATABASE_URL)' : false

async function tempDataDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dps-membership-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

t.test('a node joins only with the same secret, database and object store', { skip }, async (t) => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const databaseUrl = await freshPostgres(t, postgres as string)
  const dataDir = await tempDataDir(t)
  const secret = randomBytes(32).toString('base64url')
  const base = { REDIS_URL: redis as string, REDIS_PREFIX: prefix, DATABASE_URL: databaseUrl, AUTH_SECRET: secret }
  const node = (name: string, env: Record<string, string> = {}, dir = dataDir) =>
    startApp(t, {
      env: { ...base, MQTT_BROKER_ID: name, ...env },
      reuse: { dataDir: dir, databaseUrl: env.DATABASE_URL ?? databaseUrl, redisPrefix: prefix },
    })

  const a = await node('node-a')
  t.equal((await appFetch(`${a.url}/ok`)).status, 200, 'the first node starts')
  const b = await node('node-b')
  t.equal((await appFetch(`${b.url}/ok`)).status, 200, 'a node with the same secret, database and store joins')

  await t.rejects(
    node('node-c', { AUTH_SECRET: randomBytes(32).toString('base64url') }),
    { name: 'ConfigError', message: /AUTH_SECRET differs from the other nodes/ },
    'another AUTH_SECRET is refused',
  )
  const elsewhere = await freshPostgres(t, postgres as string)
  await t.rejects(
    node('node-d', { DATABASE_URL: elsewhere }),
    { name: 'ConfigError', message: /another database than the other nodes.*DATABASE_URL/ },
    'another database is refused',
  )
  await t.rejects(
    node('node-f', { FIRMWARE_SIGNING_KEY: newSigningKeyPem() }),
    { name: 'ConfigError', message: /signs firmware with another key.*FIRMWARE_SIGNING_KEY/ },
    'another firmware signing key is refused',
  )
  // Its own data folder, with the cluster's firmware key: only the object store differs.
  const firmwareKey = await readFile(join(dataDir, 'firmware-signing-key'), 'utf8')
  await t.rejects(
    node('node-e', { FIRMWARE_SIGNING_KEY: firmwareKey }, await tempDataDir(t)),
    { name: 'ConfigError', message: /object store is not the one the other nodes use.*S3_/ },
    'another object store is refused',
  )
  t.equal((await appFetch(`${a.url}/ok`)).status, 200, 'the cluster keeps serving')
})

// PORT 0: neither node is called over HTTP, and a port picked in advance can be taken before a
// slow start binds it (seen once on a loaded machine).
t.test('the server refuses with its exit code for configuration errors and no stack trace', { skip }, async (t) => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const databaseUrl = await freshPostgres(t, postgres as string)
  const dataDir = await tempDataDir(t)
  const base = { REDIS_URL: redis as string, REDIS_PREFIX: prefix, DATABASE_URL: databaseUrl, DATA_DIR: dataDir }
  const first = startServiceProcess(t, {
    ...base,
    AUTH_SECRET: randomBytes(32).toString('base64url'),
    PORT: '0',
    MQTT_BROKER_ID: 'node-a',
  })
  await first.waitFor(/public URL/)
  const second = await startServiceProcess(t, {
    ...base,
    AUTH_SECRET: randomBytes(32).toString('base64url'),
    PORT: '0',
    MQTT_BROKER_ID: 'node-b',
  }).closed
  t.equal(second.code, 78, 'EX_CONFIG')
  t.match(second.output, /AUTH_SECRET differs from the other nodes of this cluster: set the same AUTH_SECRET on every node/)
  t.notMatch(second.output, /\n\s+at /, 'no stack trace')
  first.child.kill('SIGTERM')
  await first.closed
})
