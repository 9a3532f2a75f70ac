// GET /api/device/:id/downlink: what the service sent a device and whether it arrived, so an
// owner can see what waits for a sleeping frame.
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { deviceAccess, deviceOf } from '../devices/route-access.js'
import { callerSecurity, errorResponses as errors } from '../http/route-schemas.js'
import { Defaulted } from '../http/typebox.js'
import { listMessages } from './repository.js'
import { downlinkStatuses } from './tables.js'

const messageSchema = {
  type: 'object',
  required: ['seq', 'kind', 'status', 'createdAt', 'deliveredAt'],
  properties: {
    seq: { type: 'integer', description: "the device's sequence number; the MQTT message carries it as `seq`" },
    kind: { type: 'string', enum: ['prompt', 'image', 'config', 'cmd', 'ota'] },
    status: {
      type: 'string',
      enum: [...downlinkStatuses],
      description: 'pending until the device acknowledges it; superseded when a newer config or image replaced it first',
    },
    createdAt: { type: 'string', format: 'date-time' },
    deliveredAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const

const params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })
const querystring = Type.Object(
  {
    limit: Defaulted(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    before: Type.Optional(Type.Integer({ minimum: 1, description: 'only messages with a lower seq (the previous page’s nextBefore)' })),
  },
  { additionalProperties: false },
)

export async function downlinkRoutes(app: FastifyInstance, opts: { auth: Auth; db: Database }) {
  const { db } = opts
  // Static types rather than the TypeBox type provider, which would also type the answer from the
  // response schema: the stored rows' kind and status are plain strings, not its enums.
  app.get<{ Params: Static<typeof params>; Querystring: Static<typeof querystring> }>(
    '/api/device/:id/downlink',
    {
      schema: {
        tags: ['device module'],
        summary: 'Messages sent to a device, newest first, and whether each arrived',
        security: callerSecurity,
        params,
        querystring,
        response: {
          200: {
            type: 'object',
            required: ['messages', 'nextBefore'],
            properties: { messages: { type: 'array', items: messageSchema }, nextBefore: { type: ['integer', 'null'] } },
          },
          ...errors(400, 401, 404),
        },
      },
      preHandler: deviceAccess(db, 'read'),
    },
    async (req) => {
      const rows = await listMessages(db, deviceOf(req).id, req.query.limit + 1, req.query.before)
      const page = rows.slice(0, req.query.limit)
      return {
        messages: page.map((m) => ({ ...m, createdAt: m.createdAt.toISOString(), deliveredAt: m.deliveredAt?.toISOString() ?? null })),
        nextBefore: rows.length > req.query.limit ? (page.at(-1)?.seq ?? null) : null,
      }
    },
  )
}
