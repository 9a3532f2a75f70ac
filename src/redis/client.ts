// The shared Redis connection, only created when REDIS_URL is set. Keys are namespaced with
// REDIS_PREFIX so several services (or test runs) can share one Redis.
import { createClient } from 'redis'


function makeClient(url: string) {
  return createClient({ url, socket: { reconnectStrategy: (retries: number) => Math.min(retries * 100, 2000) } })
}

export type RedisClient = ReturnType<typeof makeClient>

export type RedisHandle = {
  client: RedisClient
  prefix: string
  close(): Promise<void>
}

export async function connectRedis(url: string, prefix: string): Promise<RedisHandle> {
  const client = makeClient(url)
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
