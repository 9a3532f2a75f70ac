// Better Auth secondary storage on Redis: sessions (with storeSessionInDatabase kept on) and the
// rate-limit counters shared by every instance.
import type { SecondaryStorage } from 'better-auth'
import { firstReply, type RedisHandle } from '../redis/client.js'

export function redisSecondaryStorage({ client, prefix }: RedisHandle): SecondaryStorage {
  const k = (key: string) => `${prefix}auth:${key}`
  // Better Auth writes some session updates in the background. One that meets the service's
  // shutdown (the connection closed on purpose, 'end') would reject with nobody awaiting it;
  // what it wrote dies with the cache anyway. Any other failure still throws.
  const ended = () => client.status === 'end'
  const unlessClosed = async (write: () => Promise<unknown>) => {
    if (ended()) return
    try {
      await write()
    } catch (err) {
      if (!ended()) throw err
    }
  }
  return {
    async get(key) {
      return client.get(k(key))
    },
    async getAndDelete(key) {
      return client.getdel(k(key))
    },
    async set(key, value, ttl) {
      await unlessClosed(() => (ttl && ttl > 0 ? client.set(k(key), value, 'EX', Math.ceil(ttl)) : client.set(k(key), value)))
    },
    async delete(key) {
      await unlessClosed(() => client.del(k(key)))
    },
    async increment(key, ttl) {
      // INCR then EXPIRE NX in one round trip: the window starts at the first hit and is never extended.
      const replies = await client
        .multi()
        .incr(k(key))
        .expire(k(key), Math.max(1, Math.ceil(ttl)), 'NX')
        .exec()
      return Number(firstReply(replies))
    },
  }
}
