// POST /api/device/:id/logs (a device without MQTT sends its log batch with its secret) and
// GET /api/device/:id/logs (the owner reads them: level, time range, text, paging).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Database } from '../db/client.js'
import { pageOf } from '../db/paging.js'
import { requireDeviceSecret } from '../devices/access.js'
import { deviceAccess, deviceOf } from '../devices/route-access.js'
import { appError } from '../errors.js'
import { callerSecurity, cursorFrom, errorResponses as errors } from '../http/route-schemas.js'
import { Defaulted, StringEnum } from '../http/typebox.js'
import { type DeviceLogService, LOG_BATCH_MAX_BYTES, LOG_BATCH_MAX_ENTRIES } from './service.js'
import { logLevels } from './tables.js'

const tags = ['device module']
const params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })
const counts = Type.Object(
  {
    accepted: Type.Integer(),
    droppedRate: Type.Integer({ description: 'past the device’s rate' }),
    droppedSize: Type.Integer({ description: 'entries (or whole batches) over a size limit' }),
    droppedInvalid: Type.Integer({ description: 'not log entries' }),
    pruned: Type.Integer({ description: 'kept entries removed later for the count or age limit' }),
  },
  { additionalProperties: false },
)

export async function deviceLogRoutes(fastify: FastifyInstance, opts: { db: Database; logs: DeviceLogService }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db, logs } = opts

  app.post(
    '/api/device/:id/logs',
    {
      // Checked in the handler: the device's own secret, as on MQTT.
      config: { auth: 'none' },
      // Up to four times the batch limit reaches the handler, which refuses (413) and counts it.
      bodyLimit: LOG_BATCH_MAX_BYTES * 4,
      schema: {
        tags,
        summary: 'Send a batch of log entries as the device',
        description: `For devices without MQTT (the same as devices/{id}/up/log): \`Authorization: Bearer <the device's secret>\`. At most ${LOG_BATCH_MAX_ENTRIES} entries and ${LOG_BATCH_MAX_BYTES / 1024} KiB a batch; each \`{at, level, message, fields?}\`. What is refused is counted, and the answer says how much.`,
        params,
        body: Type.Array(Type.Unknown(), {
          description: 'log entries: {at (ISO or epoch ms), level (debug | info | warn | error), message, fields?}',
          examples: [
            [
              { at: '2025-06-01T07:30:00.000Z', level: 'info', message: 'Image shown', fields: { imageId: 'b7e1c2d3' } },
              { at: '2025-06-01T07:30:02.000Z', level: 'warn', message: 'Wi-Fi signal weak', fields: { rssi: -78 } },
            ],
          ],
        }),
        response: { 200: counts, ...errors(400, 401, 413) },
      },
    },
    async (req) => {
      const dev = await requireDeviceSecret(db, req.params.id, req.headers.authorization)
      const bytes = Number(req.headers['content-length'] ?? Buffer.byteLength(JSON.stringify(req.body)))
      const { refused, ...result } = await logs.ingest(dev.id, req.body, bytes)
      if (refused === 'too-large')
        throw appError('PAYLOAD_TOO_LARGE', `A batch is at most ${LOG_BATCH_MAX_ENTRIES} entries and ${LOG_BATCH_MAX_BYTES / 1024} KiB`)
      return result
    },
  )

  app.get(
    '/api/device/:id/logs',
    {
      schema: {
        tags,
        summary: "A device's log entries, newest first",
        security: callerSecurity,
        params,
        querystring: Type.Object(
          {
            level: Defaulted(StringEnum(logLevels, { default: 'debug', description: 'this level and above' })),
            since: Type.Optional(Type.String({ format: 'date-time' })),
            until: Type.Optional(Type.String({ format: 'date-time' })),
            q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'text the message contains (case-insensitive)' })),
            limit: Defaulted(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
            cursor: Type.Optional(Type.String({ maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            logs: Type.Array(
              Type.Object({
                id: Type.String(),
                at: Type.String({ format: 'date-time' }),
                receivedAt: Type.String({ format: 'date-time' }),
                level: StringEnum(logLevels),
                message: Type.String(),
                fields: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
              }),
            ),
            nextCursor: Type.Union([Type.String(), Type.Null()]),
            counts,
          }),
          ...errors(400, 401, 404),
        },
      },
      preHandler: deviceAccess(db, 'read'),
    },
    async (req) => {
      const dev = deviceOf(req)
      const q = req.query
      const rows = await logs.list(
        dev.id,
        { minLevel: q.level, since: q.since ? new Date(q.since) : undefined, until: q.until ? new Date(q.until) : undefined, text: q.q },
        q.limit + 1,
        cursorFrom(q.cursor),
      )
      const { page, nextCursor } = pageOf(
        rows.map((r) => ({ ...r, createdAt: r.at })),
        q.limit,
      )
      return {
        logs: page.map((r) => ({
          id: r.id,
          at: r.at.toISOString(),
          receivedAt: r.receivedAt.toISOString(),
          level: r.level,
          message: r.message,
          fields: r.fields ?? null,
        })),
        nextCursor,
        counts: await logs.counts(dev.id),
      }
    },
  )
}
