// Better Auth's verification values (reset tokens, magic links, one-time codes) as they sit in
// storage: the database table, and with REDIS_URL also Better Auth's cached copies in Redis.
import { sql } from 'drizzle-orm'
import { verification } from '../../src/db/schema.js'
import type { TestApp } from './app.js'

export type StoredVerification = { identifier: string; value: string }

function redisPattern(svc: TestApp): string {
  return `${svc.app.redis!.prefix}auth:verification:*`
}

export async function storedVerifications(svc: TestApp): Promise<StoredVerification[]> {
  const rows: StoredVerification[] = await svc.app.database.db
    .select({ identifier: verification.identifier, value: verification.value })
    .from(verification)
  const redis = svc.app.redis
  if (redis) {
    const keys = await redis.client.keys(redisPattern(svc))
    for (const key of keys) {
      const raw = await redis.client.get(key)
      if (!raw) continue
      const parsed = JSON.parse(raw) as { identifier: string; value: string }
      rows.push({ identifier: `${key} ${parsed.identifier}`, value: parsed.value })
    }
  }
  return rows
}

/** Moves every stored verification value's expiry a minute into the past, as time would. */
export async function expireVerifications(svc: TestApp): Promise<number> {
  const past = new Date(Date.now() - 60_000)
  const redis = svc.app.redis
  if (redis) {
    for (const key of await redis.client.keys(redisPattern(svc))) {
      const raw = await redis.client.get(key)
      if (!raw) continue
      await redis.client.set(key, JSON.stringify({ ...JSON.parse(raw), expiresAt: past.toISOString() }), 'KEEPTTL')
    }
  }
  const rows = await svc.app.database.db
    .update(verification)
    .set({ expiresAt: sql`${past.toISOString()}::timestamptz` })
    .returning({ id: verification.id })
  return rows.length
}
