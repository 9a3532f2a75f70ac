// Two service instances sharing one Redis and one PostgreSQL database: what a cluster is. Tests
// that need one skip with the reason when either service is missing.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshPostgres, startApp, type TestApp } from './app.js'
import { postgresUrl, redisUrl } from './services.js'

type Tap = Parameters<typeof freshPostgres>[0]

/** Why a cluster cannot be started here, or false when it can. */
export async function clusterSkip(): Promise<string | false> {
  if (!(await redisUrl())) return 'no Redis reachable (set REDIS_URL)'
  if (!(await postgresUrl())) return 'no PostgreSQL reachable (set DATABASE_URL): cluster nodes share one database'
  return false
}

/** Two nodes (MQTT broker ids node-a and node-b) on one Redis prefix and one fresh database. */
export async function startCluster(t: Tap, extra: Record<string, string> = {}): Promise<[TestApp, TestApp]> {
  const redis = (await redisUrl()) as string
  const prefix = `test:${randomBytes(6).toString('hex')}:`
  const databaseUrl = await freshPostgres(t, (await postgresUrl()) as string)
  // Nodes of one cluster share the database, Redis, the object store and AUTH_SECRET (sessions, stored keys).
  const env = {
    REDIS_URL: redis,
    REDIS_PREFIX: prefix,
    DATABASE_URL: databaseUrl,
    AUTH_SECRET: randomBytes(32).toString('base64url'),
    DEVICE_POLL_INTERVAL: '0',
    ...extra,
  }
  // One data folder stands for the shared volume their object store must be on.
  const dataDir = await mkdtemp(join(tmpdir(), 'dps-cluster-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const a = await startApp(t, { env: { ...env, MQTT_BROKER_ID: 'node-a' }, reuse: { dataDir, databaseUrl, redisPrefix: prefix } })
  const b = await startApp(t, { env: { ...env, MQTT_BROKER_ID: 'node-b' }, reuse: { dataDir, databaseUrl, redisPrefix: prefix } })
  return [a, b]
}
