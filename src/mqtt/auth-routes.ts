// POST /api/device/mqtt-auth: the HTTP authentication and authorization hook of an external
// broker (EMQX HTTP auth format). Authentication: {clientid, username, password}; authorization:
// {clientid, username, topic, action: publish|subscribe}. Answers {result: allow|deny}.
// EMQX's authorization request carries no password, so an authorization is answered for the
// identity the connection proved: a device by its id (still paired, not revoked), an app by the
// session it authenticated with (remembered per client id, still live).
import { timingSafeEqual, createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { StringEnum } from '../http/typebox.js'
import { APP_USERNAME, checkCredentials, directAccessCheck, directLookup, mayPublish, maySubscribe, type Identity } from './credentials.js'
import { findLiveSession } from '../auth/users-repository.js'
import type { RedisHandle } from '../redis/client.js'
import type { Auth } from '../auth/auth.js'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { appError } from '../errors.js'
import { exampleIds } from '../openapi/examples.js'

const body = Type.Object(
  {
    clientid: Type.String({ maxLength: 256 }),
    username: Type.Optional(Type.String({ maxLength: 256 })),
    password: Type.Optional(Type.String({ maxLength: 4096 })),
    topic: Type.Optional(Type.String({ maxLength: 1024 })),
    action: Type.Optional(StringEnum(['publish', 'subscribe'])),
  },
  // A device connecting: its id is its client id and user name, its secret the password.
  { examples: [{ clientid: exampleIds.deviceId, username: exampleIds.deviceId, password: exampleIds.deviceSecret }] },
)

const digest = (s: string) => createHash('sha256').update(s).digest()

/** Which session an app's MQTT client id authenticated with: in Redis (shared by instances) or in process. */
function appGrants(redis: RedisHandle | undefined) {
  const memory = new Map<string, { sessionId: string; until: number }>()
  const key = (clientId: string) => `${redis?.prefix}mqtt-app:${clientId}`
  return {
    async remember(clientId: string, sessionId: string, expiresAt: Date) {
      const seconds = Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000))
      if (redis) await redis.client.set(key(clientId), sessionId, 'EX', seconds)
      else {
        if (memory.size > 100_000) for (const [k, v] of memory) if (v.until <= Date.now()) memory.delete(k)
        memory.set(clientId, { sessionId, until: expiresAt.getTime() })
      }
    },
    async sessionOf(clientId: string): Promise<string | undefined> {
      if (redis) return (await redis.client.get(key(clientId))) ?? undefined
      const e = memory.get(clientId)
      return e && e.until > Date.now() ? e.sessionId : undefined
    },
  }
}

export async function mqttAuthRoutes(
  app: FastifyInstance,
  opts: { auth: Auth; db: Database; config: Config; secret: string; redis?: RedisHandle },
) {
  const { auth, db, config } = opts
  /** MQTT_AUTH_SECRET: the routes are registered only when it is set. */
  const secret = opts.secret
  const service = config.mqtt.external
  const grants = appGrants(opts.redis)
  const lookup = directLookup(db)
  const canSee = directAccessCheck(db)

  /** The identity behind an authorization request, which carries no password. */
  async function identityOf(clientid: string, username: string | undefined): Promise<Identity | undefined> {
    if (username === APP_USERNAME) {
      const sessionId = await grants.sessionOf(clientid)
      const live = sessionId ? await findLiveSession(db, sessionId) : undefined
      return live ? { kind: 'app', userId: live.userId } : undefined
    }
    if (!username || username !== clientid) return undefined
    const dev = await lookup(username).catch(() => undefined)
    return dev?.secretHash ? { kind: 'device', deviceId: dev.id } : undefined
  }

  app.post<{ Body: Static<typeof body> }>(
    '/api/device/mqtt-auth',
    {
      // The hook secret is checked before the body is read, like every other credential.
      preParsing: async (req) => {
        const given = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '')
        if (!timingSafeEqual(digest(given), digest(secret))) throw appError('UNAUTHORIZED', 'Wrong or missing hook secret')
      },
      schema: {
        tags: ['device module'],
        summary: 'Authentication and ACL hook for an external MQTT broker',
        description:
          'Protected by `Authorization: Bearer <MQTT_AUTH_SECRET>`. Without a topic it authenticates; with topic and action it authorizes.',
        security: [{ mqttAuthSecret: [] }],
        body,
        response: {
          200: {
            type: 'object',
            required: ['result'],
            properties: { result: { type: 'string', enum: ['allow', 'deny', 'ignore'] }, is_superuser: { type: 'boolean' } },
          },
          401: { $ref: 'Error#' },
        },
      },
    },
    async (req) => {
      const { clientid, username, password = '', topic, action } = req.body
      // The service's own connection to the external broker may do anything. It proves itself with
      // its password when it connects; an authorization request is about a connection that did.
      const isService = Boolean(service?.username) && username === service?.username
      if (
        isService &&
        (topic && action ? true : service?.password !== undefined && timingSafeEqual(digest(password), digest(service.password)))
      ) {
        return { result: 'allow', is_superuser: true }
      }
      if (!topic || !action) {
        const check = await checkCredentials(db, auth, clientid, username, password)
        if (check.ok && check.identity.kind === 'app' && check.session)
          await grants.remember(clientid, check.session.id, check.session.expiresAt)
        return { result: check.ok ? 'allow' : 'deny', is_superuser: false }
      }
      const identity = await identityOf(clientid, username)
      if (!identity) return { result: 'deny' }
      const allowed = action === 'publish' ? mayPublish(identity, topic) : await maySubscribe(identity, topic, canSee)
      return { result: allowed ? 'allow' : 'deny' }
    },
  )
}
