// POST /api/device/rabbitmq/{user,vhost,resource,topic}: RabbitMQ's HTTP auth backend
// (rabbitmq_auth_backend_http, http_method post), so devices live on RabbitMQ's MQTT listener
// with their pairing credentials and the embedded broker's topic rights (rabbitmq-rules.ts).
// RabbitMQ sends form-encoded fields and reads a plain-text answer: "allow" or "deny" (a user may
// be allowed with tags, "allow management"; devices get none). Only devices are answered "allow":
// every other name is denied, so the next backend of the chain (rabbit_auth_backend_internal)
// authenticates the service's own account and answers for it from then on.
//
// Who calls: RabbitMQ with the shared MQTT_AUTH_SECRET as the password of HTTP Basic auth (its
// httpc sends the user-info of the configured URL, http://rabbitmq:SECRET@host/...), checked
// before the body is read, as on the EMQX hook: without it the routes would tell anyone on the
// network whether a device secret is right.
//
// With RABBITMQ_DEVICE_USERS the chain is internal first: a device provisioned as an internal
// user never reaches these routes; one paired before (or whose provisioning failed) is checked
// here once and provisioned then, so its next connect is RabbitMQ's alone.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { checkCredentials, directLookup } from './credentials.js'
import { rabbitDeviceUsers } from './rabbitmq-device-users.js'
import { rabbitManagement } from './rabbitmq-management.js'
import { deviceResourceAllowed, deviceTopicAllowed, isOwnMqttSession, type RabbitAsk } from './rabbitmq-rules.js'
import type { Auth } from '../auth/auth.js'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { appError } from '../errors.js'
import { exampleIds } from '../openapi/examples.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const field = (maxLength: number) => Type.Optional(Type.String({ maxLength }))
// RabbitMQ adds fields as it grows (tags, variable_map.*): the ones not listed are accepted and ignored.
const open = { additionalProperties: true } as const
/** What RabbitMQ asks about the example device (its id is its user name and client id). */
const device = { username: exampleIds.deviceId, vhost: '/' }
const userBody = Type.Object(
  { username: Type.String({ maxLength: 256 }), password: field(4096), vhost: field(256), client_id: field(256) },
  { ...open, examples: [{ ...device, password: exampleIds.deviceSecret, client_id: exampleIds.deviceId }] },
)
const vhostBody = Type.Object(
  { username: Type.String({ maxLength: 256 }), vhost: field(256), ip: field(64), client_id: field(256) },
  { ...open, examples: [{ ...device, ip: '192.0.2.10', client_id: exampleIds.deviceId }] },
)
/** What RabbitMQ sends about a resource (and, with a routing key, a topic) a user would touch. */
const resourceFields = {
  username: Type.String({ maxLength: 256 }),
  vhost: field(256),
  resource: Type.String({ maxLength: 32 }),
  name: Type.String({ maxLength: 256 }),
  permission: Type.String({ maxLength: 32 }),
}
const resourceBody = Type.Object(
  { ...resourceFields, client_id: field(256) },
  {
    ...open,
    examples: [
      {
        ...device,
        resource: 'queue',
        name: `mqtt-subscription-${exampleIds.deviceId}qos1`,
        permission: 'configure',
        client_id: exampleIds.deviceId,
      },
    ],
  },
)
const topicBody = Type.Object(
  { ...resourceFields, routing_key: Type.String({ maxLength: 1024 }), 'variable_map.client_id': field(256) },
  {
    ...open,
    examples: [
      {
        ...device,
        resource: 'topic',
        name: 'amq.topic',
        permission: 'write',
        routing_key: `devices.${exampleIds.deviceId}.up.status`,
        'variable_map.client_id': exampleIds.deviceId,
      },
    ],
  },
)

type Answer = 'allow' | 'deny'
const digest = (s: string) => createHash('sha256').update(s).digest()

/** The secret from `Authorization: Basic base64(any-name:SECRET)` (or Bearer SECRET, as on the EMQX hook). */
function givenSecret(header: string | undefined): string {
  if (!header) return ''
  const [scheme, value = ''] = header.split(/\s+/, 2)
  if (/^bearer$/i.test(scheme ?? '')) return value
  if (!/^basic$/i.test(scheme ?? '')) return ''
  const decoded = Buffer.from(value, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon < 0 ? '' : decoded.slice(colon + 1)
}

export async function rabbitmqAuthRoutes(app: FastifyInstance, opts: { auth: Auth; db: Database; config: Config; secret: string }) {
  const { auth, db, config } = opts
  /** MQTT_AUTH_SECRET: the routes are registered only when it is set. */
  const secret = opts.secret
  const vhost = config.mqtt.rabbitmq.vhost
  const lookup = directLookup(db)
  const { managementUrl, deviceUsers } = config.mqtt.rabbitmq
  const users =
    managementUrl && deviceUsers
      ? rabbitDeviceUsers({ management: rabbitManagement(managementUrl), vhost, lookup, log: app.log })
      : undefined

  // RabbitMQ posts application/x-www-form-urlencoded: flat fields, read here only (this plugin's scope).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16_384 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })

  /** A device still paired, asking for its own MQTT session in our vhost. */
  async function pairedDevice(ask: RabbitAsk): Promise<string | undefined> {
    if (!UUID.test(ask.username) || !isOwnMqttSession(ask) || (ask.vhost !== undefined && ask.vhost !== vhost)) return undefined
    const dev = await lookup(ask.username)
    return dev?.secretHash ? dev.id : undefined
  }

  const routeOptions = (path: string, summary: string, body: object) => ({
    // The shared secret is checked before the body is read, like every other credential.
    preParsing: async (req: { headers: { authorization?: string } }) => {
      if (!timingSafeEqual(digest(givenSecret(req.headers.authorization)), digest(secret)))
        throw appError('UNAUTHORIZED', 'Wrong or missing hook secret')
    },
    schema: {
      tags: ['device module'],
      summary,
      description: `RabbitMQ's HTTP auth backend (${path}), form-encoded as RabbitMQ sends it; answers \`allow\` or \`deny\` as plain text. Protected by HTTP Basic auth with MQTT_AUTH_SECRET as the password (docs/rabbitmq.md).`,
      security: [{ rabbitmqAuthSecret: [] }],
      consumes: ['application/x-www-form-urlencoded'],
      body,
      response: {
        200: { description: 'allow or deny', content: { 'text/plain': { schema: { type: 'string', enum: ['allow', 'deny'] } } } },
        401: { $ref: 'Error#' },
      },
    },
  })
  const answer = (allowed: boolean): Answer => (allowed ? 'allow' : 'deny')

  app.post<{ Body: Static<typeof userBody> }>(
    '/api/device/rabbitmq/user',
    routeOptions('user_path', 'RabbitMQ auth backend: may this user connect?', userBody),
    async (req, reply) => {
      const { username, password = '', client_id: clientId } = req.body
      reply.type('text/plain; charset=utf-8')
      // Not a device: denied here, so the chain's next backend (internal users) decides.
      if (!UUID.test(username) || clientId !== username) return answer(false)
      const check = await checkCredentials(db, auth, clientId, username, password, lookup)
      const allowed = check.ok && check.identity.kind === 'device'
      // Not awaited: RabbitMQ waits for this answer, and the user is for the next connect.
      if (allowed) void users?.provision(username, password)
      // "allow" with no tags: a device may not use the management UI or API.
      return answer(allowed)
    },
  )

  app.post<{ Body: Static<typeof vhostBody> }>(
    '/api/device/rabbitmq/vhost',
    routeOptions('vhost_path', 'RabbitMQ auth backend: may this user use the vhost?', vhostBody),
    async (req, reply) => {
      reply.type('text/plain; charset=utf-8')
      const { username, vhost: asked, client_id: clientId } = req.body
      return answer((await pairedDevice({ username, clientId, vhost: asked ?? '' })) !== undefined)
    },
  )

  app.post<{ Body: Static<typeof resourceBody> }>(
    '/api/device/rabbitmq/resource',
    routeOptions('resource_path', 'RabbitMQ auth backend: may this user configure, write or read the exchange or queue?', resourceBody),
    async (req, reply) => {
      reply.type('text/plain; charset=utf-8')
      const b = req.body
      const ask = {
        username: b.username,
        clientId: b.client_id,
        vhost: b.vhost ?? '',
        resource: b.resource,
        name: b.name,
        permission: b.permission,
      }
      const deviceId = await pairedDevice(ask)
      return answer(deviceId !== undefined && deviceResourceAllowed(deviceId, ask))
    },
  )

  app.post<{ Body: Static<typeof topicBody> }>(
    '/api/device/rabbitmq/topic',
    routeOptions('topic_path', 'RabbitMQ auth backend: may this user publish to, or bind with, the routing key?', topicBody),
    async (req, reply) => {
      reply.type('text/plain; charset=utf-8')
      const b = req.body
      const ask = {
        username: b.username,
        clientId: b['variable_map.client_id'],
        vhost: b.vhost ?? '',
        name: b.name,
        permission: b.permission,
        routingKey: b.routing_key,
      }
      const deviceId = await pairedDevice(ask)
      return answer(deviceId !== undefined && deviceTopicAllowed(deviceId, ask))
    },
  )
}
