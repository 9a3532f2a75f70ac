// The HTTP layer every route relies on: error answers, framing, JSON parsing and validation,
// the shared schemas, cross-origin and rate limits, and the drain of running handlers on close.
import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import { sessionRecordSchema, userRecordSchema } from '../auth/session-shape.js'
import { sharedDeviceSchemas } from '../devices/records.js'
import { errorBodySchema, installErrorHandling, type NotFoundFallback } from '../errors.js'
import { eventRecordSchema } from '../events/records.js'
import { generationRequestSchema, generationResponseSchema, generationResultSchema } from '../generation/records.js'
import { promptInputSchema, promptRecordSchema, promptTemplatesSchema } from '../prompts/records.js'
import { playlistItemInputSchema, playlistRecordSchema, scheduleRecordSchema } from '../schedules/records.js'
import { trackHandlers } from './drain.js'
import { forbidFraming } from './frame-guard.js'
import { checkMultipartBoundaries } from './multipart-boundary.js'
import { registerRateLimit } from './rate-limit.js'
import { installSchemaCompilers } from './schema-compilers.js'
import { installJsonParser } from './validation.js'

declare module 'fastify' {
  interface FastifyInstance {
    http: {
      /** What answers a request no route matched before it is a 404 (the console's deep links). */
      setNotFoundFallback(fallback: NotFoundFallback): void
      /** Resolves once the route handlers started so far have finished (see drain.ts). */
      settled(limitMs?: number): Promise<number>
    }
  }
}

// Before any route: the drain and the multipart check wrap routes as they are added.
export const httpPlugin = fp(
  async (app) => {
    const errorHandling = installErrorHandling(app)
    forbidFraming(app)
    const handlers = trackHandlers(app)
    const shared = [
      errorBodySchema,
      sessionRecordSchema,
      userRecordSchema,
      eventRecordSchema,
      ...sharedDeviceSchemas,
      promptInputSchema,
      promptRecordSchema,
      promptTemplatesSchema,
      generationRequestSchema,
      generationResultSchema,
      generationResponseSchema,
      playlistItemInputSchema,
      playlistRecordSchema,
      scheduleRecordSchema,
    ]
    for (const schema of shared) app.addSchema(schema)
    installSchemaCompilers(app, shared)
    installJsonParser(app)
    checkMultipartBoundaries(app)
    app.decorate('http', { setNotFoundFallback: errorHandling.setNotFoundFallback, settled: handlers.settled })
  },
  { name: 'http' },
)

// Before any route but after the route auth (its preParsing runs after every onRequest hook, the rate limit's too).
export const requestPolicyPlugin = fp(
  async (app) => {
    const { config } = app
    await app.register(cors, {
      origin: config.trustedOrigins.length ? config.trustedOrigins : false,
      credentials: true,
      // Every method the API uses (the plugin's default is GET, HEAD and POST only).
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    })
    await registerRateLimit(app, { window: config.rateLimit.window, max: config.rateLimit.max, redis: app.redis })
  },
  { name: 'request-policy', dependencies: ['config', 'redis', 'openapi'] },
)

// Registered last, so it runs first of the onClose hooks (they run in reverse), once the HTTP
// server has closed: handlers whose clients left finish before anything they use is closed.
export const drainPlugin = fp(
  async (app) => {
    app.addHook('onClose', async () => {
      const left = await app.http.settled()
      if (left) app.log.warn({ handlers: left }, 'closing with requests still running after 15 s')
    })
  },
  { name: 'drain', dependencies: ['http'] },
)
