import fp from 'fastify-plugin'
import { connectRedis, type RedisHandle } from './client.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Present when REDIS_URL is set: shared sessions, rate limits, the MQTT cluster. */
    redis?: RedisHandle
  }
}

export const redisPlugin = fp(
  async (app) => {
    const { redisUrl, redisPrefix } = app.config
    if (!redisUrl) return
    const redis = await connectRedis(redisUrl, redisPrefix)
    app.decorate('redis', redis)
    app.addHook('onClose', async () => redis.close())
  },
  { name: 'redis', dependencies: ['config'] },
)
