// Request limits for the whole app, keyed on the address Fastify resolved (the socket, or a
// trusted proxy's header when TRUST_PROXY is set). Counters live in Redis when it is configured,
// so every instance shares them. Better Auth applies its stricter per-endpoint limits on top.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import type { RedisHandle } from '../redis/client.js'

export async function registerRateLimit(app: FastifyInstance, opts: { window: number; max: number; redis?: RedisHandle }) {
  await app.register(rateLimit, {
    global: true,
    max: opts.max,
    timeWindow: opts.window * 1000,
    keyGenerator: (req) => req.ip,
    // A Redis outage must not take the API down with it.
    skipOnError: true,
    // The plugin's own Redis store (ioredis); the prefix keeps apps sharing one Redis apart.
    ...(opts.redis ? { redis: opts.redis.client, nameSpace: `${opts.redis.prefix}rl:` } : {}),
    errorResponseBuilder: (_req, ctx) => ({
      statusCode: 429,
      code: 'TOO_MANY_REQUESTS',
      message: `Too many requests, retry in ${Math.ceil(ctx.ttl / 1000)} seconds`,
    }),
  })
}
