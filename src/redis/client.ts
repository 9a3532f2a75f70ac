// The shared Redis connection, only created when REDIS_URL is set. Keys are namespaced with
// REDIS_PREFIX so several services (or test runs) can share one Redis.
// ioredis, the library the aedes cluster parts need anyway: one Redis client for the whole app.
// It is loaded only when Redis is configured.
import type { Redis } from 'ioredis'

type RedisClient = Redis

async function makeClient(url: string): Promise<RedisClient> {
  const { Redis } = await import('ioredis')
  return new Redis(url, { lazyConnect: true, retryStrategy: (times: number) => Math.min(times * 100, 2000) })
}

export type RedisHandle = {
  client: RedisClient
  prefix: string
  close(): Promise<void>
}

export async function connectRedis(url: string, prefix: string): Promise<RedisHandle> {
  const client = await makeClient(url)
  // Without a listener, a dropped connection would crash the process; reconnects are automatic.
  client.on('error', () => {})
  await client.connect()
  return {
    client,
    prefix,
    async close() {
      if (client.status !== 'end') await client.quit().catch(() => client.disconnect())
    },
  }
}

/** The first command's result of a MULTI: ioredis gives [error, result] pairs, and null when the transaction was discarded. */
export function firstReply(replies: Array<[Error | null, unknown]> | null): unknown {
  const [first] = replies ?? []
  if (!first) throw new Error('the Redis transaction was discarded')
  if (first[0]) throw first[0]
  return first[1]
}
