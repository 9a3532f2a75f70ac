// Request limits for the whole app, keyed on the address Fastify resolved (the socket, or a
// trusted proxy's header when TRUST_PROXY is set). Counters live in Redis when it is configured,
// so every instance shares them. Better Auth applies its stricter per-endpoint limits on top.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import type { RedisHandle } from '../redis/client.js'

type IncrResult = { current: number; ttl: number }

function redisStoreClass(redis: RedisHandle) {
  return class RedisRateLimitStore {
    constructor(private readonly scope = 'global') {}
    incr(key: string, cb: (err: Error | null, res?: IncrResult) => void, timeWindow: number) {
      const k = `${redis.prefix}rl:${this.scope}:${key}`
      redis.client
        .multi()
        .incr(k)
        .pExpire(k, timeWindow, 'NX')
        .pTTL(k)
        .exec()
        .then((replies) => {
          const [current, , ttl] = replies as unknown as [number, number, number]
          cb(null, { current: Number(current), ttl: Number(ttl) > 0 ? Number(ttl) : timeWindow })
        })
        .catch((err: Error) => cb(err))
    }
    child(routeOptions: { path: string; method?: string | string[] }) {
      return new RedisRateLimitStore(`${routeOptions.method}:${routeOptions.path}`)
    }
  }
}

export async function registerRateLimit(app: FastifyInstance, opts: { window: number; max: number; redis?: RedisHandle }) {
  await app.register(rateLimit, {
    global: true,
    max: opts.max,
    timeWindow: opts.window * 1000,
    keyGenerator: (req) => req.ip,
    // A Redis outage must not take the API down with it.
    skipOnError: true,
    ...(opts.redis ? { store: redisStoreClass(opts.redis) as never } : {}),
    errorResponseBuilder: (_req, ctx) => ({
      statusCode: 429,
      code: 'TOO_MANY_REQUESTS',
      message: `Too many requests, retry in ${Math.ceil(ctx.ttl / 1000)} seconds`,
    }),
  })
}
