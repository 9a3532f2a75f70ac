// Nodes that share a Redis (REDIS_URL and REDIS_PREFIX) are one cluster: they must also share
// the database, the object store, AUTH_SECRET and the firmware signing key, or sessions, stored keys and images of one node
// are unknown to the others (a session signed on node A is refused by B, an image stored in A's
// DATA_DIR is a 404 on B). Each node compares a fingerprint of each with what the live nodes
// registered in Redis, and refuses to start on a mismatch, naming the setting to fix.
import { createHash, randomUUID } from 'node:crypto'
import { ConfigError } from '../config.js'
import type { Database } from '../db/client.js'
import type { RedisHandle } from '../redis/client.js'
import { insertSettingOnce } from '../settings/repository.js'
import type { ObjectStore } from '../storage/store.js'

/** The object every node of a cluster must be able to read back from its own store: one per registration. */
const markerKey = (token: string) => `cluster/marker-${token}.txt`

type Fingerprint = { name: string; value: string; fix: string }

export type Membership = { close(): void }

/**
 * Registers this node's fingerprints (or checks them against those registered). Registrations
 * live as long as some node keeps refreshing them (every `refreshMs`, for three intervals), so
 * a cluster that is stopped entirely may come back with a new secret or store.
 */
export async function joinCluster(deps: {
  redis: RedisHandle
  db: Database
  storage: ObjectStore
  authSecret: string
  /** The firmware signing key's public half: releases signed on one node are checked by devices against what another node gave them. */
  firmwareKey: string
  refreshMs: number
}): Promise<Membership> {
  const { redis, refreshMs } = deps
  const ttl = refreshMs * 3
  const key = (name: string) => `${redis.prefix}cluster:${name}`

  const databaseId = await insertSettingOnce(deps.db, 'cluster_database_id', randomUUID())
  const fingerprints: Fingerprint[] = [
    {
      name: 'auth-secret',
      value: createHash('sha256').update(`dps cluster ${deps.authSecret}`).digest('hex'),
      fix: 'AUTH_SECRET differs from the other nodes of this cluster: set the same AUTH_SECRET on every node',
    },
    {
      name: 'firmware-key',
      value: deps.firmwareKey,
      fix: 'this node signs firmware with another key than the other nodes: set the same FIRMWARE_SIGNING_KEY on every node (or share DATA_DIR/firmware-signing-key)',
    },
    {
      name: 'database',
      value: databaseId,
      fix: 'this node uses another database than the other nodes of this cluster: point every node at the same PostgreSQL (DATABASE_URL); the embedded PGlite cannot be shared',
    },
  ]
  for (const f of fingerprints) await claim(f)
  await checkStorage()

  async function claim(f: Fingerprint): Promise<void> {
    const stored = await redis.client.set(key(f.name), f.value, 'PX', ttl, 'NX')
    if (stored === 'OK') return
    const current = await redis.client.get(key(f.name))
    if (current !== null && current !== f.value)
      throw new ConfigError(`Cannot join the cluster on REDIS_URL (REDIS_PREFIX=${redis.prefix}): ${f.fix}`)
    if (current === null) return claim(f)
  }

  /** The marker object the first node wrote must be readable, with the same content, from this node's store. */
  async function checkStorage(): Promise<void> {
    const token = randomUUID()
    // Written before it is registered, so a node starting at the same moment finds it.
    await deps.storage.put(markerKey(token), Buffer.from(token), { contentType: 'text/plain' })
    const stored = await redis.client.set(key('storage'), token, 'PX', ttl, 'NX')
    if (stored === 'OK') return
    await deps.storage.delete(markerKey(token)).catch(() => {})
    const expected = await redis.client.get(key('storage'))
    if (expected === null) return checkStorage()
    const found = await deps.storage.get(markerKey(expected)).catch(() => null)
    if (found?.body.toString('utf8') !== expected) {
      throw new ConfigError(
        `Cannot join the cluster on REDIS_URL (REDIS_PREFIX=${redis.prefix}): this node's object store is not the one the other nodes use (an image stored by one would be missing on another): set the same S3_* settings on every node, or put DATA_DIR/objects on a shared volume`,
      )
    }
  }

  const timer = setInterval(() => {
    for (const name of [...fingerprints.map((f) => f.name), 'storage']) void redis.client.pexpire(key(name), ttl).catch(() => {})
  }, refreshMs)
  timer.unref()
  return { close: () => clearInterval(timer) }
}
