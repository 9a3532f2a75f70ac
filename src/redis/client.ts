// The shared Redis connection, only created when REDIS_URL is set. Keys are namespaced with
// REDIS_PREFIX so several services (or test runs) can share one Redis.
// The client library is loaded only when Redis is configured.
import type { RedisClientType, RedisDefaultModules } from 'redis'

export type RedisClient = RedisClientType<RedisDefaultModules, {}, {}, 3>

async function makeClient(url: string): Promise<RedisClient> {
  const { createClient } = await import('redis')
  return createClient({ url, socket: { reconnectStrategy: (retries: number) => Math.min(retries * 100, 2000) } })
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
      if (client.isOpen) await client.close()
    },
  }
}
