// POST /api/device/mqtt-auth: the HTTP authentication and authorization hook of an external
// broker (EMQX HTTP auth format). Authentication: {clientid, username, password}; authorization:
// {clientid, username, password?, topic, action: publish|subscribe}. Answers {result: allow|deny}.
import { timingSafeEqual, createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { checkCredentials, mayPublish, maySubscribe } from '../../broker/credentials.js'
import type { Auth } from '../auth/auth.js'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { AppError } from '../errors.js'

type Body = { clientid: string; username?: string; password?: string; topic?: string; action?: 'publish' | 'subscribe' }

const digest = (s: string) => createHash('sha256').update(s).digest()

export async function mqttAuthRoutes(app: FastifyInstance, opts: { auth: Auth; db: Database; config: Config }) {
  const { auth, db, config } = opts
  const secret = config.mqtt.authSecret
  const service = config.mqtt.external

  app.post<{ Body: Body }>(
    '/api/device/mqtt-auth',
    {
      schema: {
        tags: ['device module'],
        summary: 'Authentication and ACL hook for an external MQTT broker',
        description: 'Protected by `Authorization: Bearer <MQTT_AUTH_SECRET>`. Without a topic it authenticates; with topic and action it authorizes.',
        security: [{ mqttAuthSecret: [] }],
        body: {
          type: 'object',
          required: ['clientid'],
          properties: {
            clientid: { type: 'string', maxLength: 256 },
            username: { type: 'string', maxLength: 256 },
            password: { type: 'string', maxLength: 4096 },
            topic: { type: 'string', maxLength: 1024 },
            action: { type: 'string', enum: ['publish', 'subscribe'] },
          },
        },
        response: {
          200: { type: 'object', required: ['result'], properties: { result: { type: 'string', enum: ['allow', 'deny', 'ignore'] }, is_superuser: { type: 'boolean' } } },
          401: { $ref: 'Error#' },
          503: { $ref: 'Error#' },
        },
      },
    },
    async (req) => {
      if (!secret) throw new AppError(503, 'MQTT_AUTH_DISABLED', 'Set MQTT_AUTH_SECRET to enable the external-broker hook')
      const given = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '')
      if (!timingSafeEqual(digest(given), digest(secret))) throw new AppError(401, 'UNAUTHORIZED', 'Wrong or missing hook secret')
      const { clientid, username, password = '', topic, action } = req.body
      // The service's own connection to the external broker may do anything.
      if (service?.username && username === service.username && service.password !== undefined && timingSafeEqual(digest(password), digest(service.password))) {
        return { result: 'allow', is_superuser: true }
      }
      const check = await checkCredentials(db, auth, clientid, username, password)
      if (!topic || !action) return { result: check.ok ? 'allow' : 'deny', is_superuser: false }
      if (!check.ok) return { result: 'deny' }
      const allowed = action === 'publish' ? mayPublish(check.identity, topic) : await maySubscribe(db, check.identity, topic)
      return { result: allowed ? 'allow' : 'deny' }
    },
  )
}
