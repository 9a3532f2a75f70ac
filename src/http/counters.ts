// Fixed-window counters for failed attempts (pairing-code guesses). In-process by default;
// in Redis when configured so every instance sees the same count.
import { firstReply, type RedisHandle } from '../redis/client.js'

export type Counters = {
  /** Adds one to `key` (window starts at the first hit) and returns the new count. */
  hit(key: string, windowSeconds: number): Promise<number>
  get(key: string): Promise<number>
  /** Seconds until `key`'s window ends (0 when it has none). */
  secondsLeft(key: string): Promise<number>
}

export function memoryCounters(): Counters {
  const entries = new Map<string, { count: number; resetAt: number }>()
  const live = (key: string) => {
    const e = entries.get(key)
    if (e && e.resetAt <= Date.now()) {
      entries.delete(key)
      return undefined
    }
    return e
  }
  return {
    async hit(key, windowSeconds) {
      const e = live(key)
      if (e) return ++e.count
      if (entries.size > 100_000) for (const k of entries.keys()) live(k)
      entries.set(key, { count: 1, resetAt: Date.now() + windowSeconds * 1000 })
      return 1
    },
    async get(key) {
      return live(key)?.count ?? 0
    },
    async secondsLeft(key) {
      const e = live(key)
      return e ? Math.max(1, Math.ceil((e.resetAt - Date.now()) / 1000)) : 0
    },
  }
}

export function redisCounters({ client, prefix }: RedisHandle): Counters {
  const k = (key: string) => `${prefix}count:${key}`
  return {
    async hit(key, windowSeconds) {
      const replies = await client.multi().incr(k(key)).expire(k(key), windowSeconds, 'NX').exec()
      return Number(firstReply(replies))
    },
    async get(key) {
      return Number((await client.get(k(key))) ?? 0)
    },
    async secondsLeft(key) {
      const ttl = await client.ttl(k(key))
      return Math.max(ttl, 0)
    },
  }
}
