// The device module's HTTP routes. Schemas here validate input and shape every response.
import { errorResponses as errors, callerSecurity, cursorFrom } from '../http/route-schemas.js'
import { pageOf } from '../db/paging.js'
import { principalOf } from '../auth/route-auth.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { appError } from '../errors.js'
import { listDeviceEvents } from '../events/repository.js'
import { toEventRecord } from '../events/records.js'
import { claimBody, codeBody, deviceId, initBody, patchBody } from './inputs.js'
import { toDeviceDetail, toDeviceRecord, unreadableMessage, unreadableRecord } from './records.js'
import { findMemberRole, listDevices } from './repository.js'
import { deviceAccess, deviceOf } from './route-access.js'
import type { DeviceService } from './service.js'
import { deviceCommandNames } from './tables.js'
import { Defaulted, StringEnum } from '../http/typebox.js'
import { exampleIds } from '../openapi/examples.js'

// The interface lists devices in its device module and in its admin API.
const tags = ['device module', 'admin API']

const idBody = Type.Object({ deviceId }, { additionalProperties: false, examples: [{ deviceId: exampleIds.deviceId }] })

const commandBody = Type.Object(
  {
    command: StringEnum(deviceCommandNames),
    args: Type.Optional(
      Type.Object(
        { seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'for sleep: how long to stay away' })) },
        { additionalProperties: false, description: 'as the device gets them in the MQTT message {commandId, command, args}' },
      ),
    ),
    seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86400, description: 'for sleep: the same as args.seconds (accepted for older clients)' }),
    ),
  },
  { additionalProperties: false, examples: [{ command: 'sleep', args: { seconds: 3600 } }] },
)

/**
 * A command's args, or 400 for what the schema cannot say about its seconds. Checked before the
 * device is looked up, as the schema is: a malformed command is 400 whoever sends it.
 */
function commandArgs({ command, args, seconds: legacy }: Static<typeof commandBody>): { seconds?: number } {
  const seconds = args?.seconds ?? legacy
  if (args?.seconds && legacy && args.seconds !== legacy)
    throw appError('VALIDATION_ERROR', 'seconds and args.seconds differ: send one of them')
  if (command === 'sleep' && !seconds) throw appError('VALIDATION_ERROR', 'sleep needs args.seconds')
  if (command !== 'sleep' && seconds) throw appError('VALIDATION_ERROR', `${command} takes no seconds (only sleep does)`)
  return command === 'sleep' ? { seconds } : {}
}

export async function deviceRoutes(fastify: FastifyInstance, opts: { auth: Auth; db: Database; devices: DeviceService }) {
  // Request types are inferred from the TypeBox schemas below.
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db, devices } = opts

  app.post(
    '/api/device/init',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Init remote device',
        description:
          'Called by the device (no account). Starts pairing and returns the codes to show. Fields this service does not know are ignored (here and in `display`), so a newer firmware pairs with an older service.',
        body: initBody,
        response: {
          200: {
            type: 'object',
            required: [
              'deviceId',
              'deviceCode',
              'userCode',
              'pinCode',
              'verification_uri',
              'verification_uri_complete',
              'expires_at',
              'interval',
            ],
            properties: {
              deviceId: { type: 'string' },
              deviceCode: { type: 'string', description: 'secret the device polls with' },
              userCode: { type: 'string', format: 'uuid' },
              pinCode: { type: 'string', pattern: '^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$' },
              verification_uri: { type: 'string' },
              verification_uri_complete: { type: 'string' },
              expires_at: { type: 'string', format: 'date-time' },
              expires_in: { type: 'integer' },
              interval: { type: 'integer' },
            },
          },
          ...errors(400, 429),
        },
      },
    },
    async (req) => devices.init(req.body),
  )

  app.post(
    '/api/device/validate',
    {
      schema: {
        tags,
        summary: 'Validate device credentials',
        description: 'The signed-in user claims the device showing this pinCode (or userCode from its QR code).',
        security: callerSecurity,
        body: claimBody,
        response: {
          200: {
            type: 'object',
            required: ['success', 'status', 'eventId', 'device'],
            properties: {
              success: { type: 'boolean' },
              status: { type: 'string' },
              eventId: { type: 'string' },
              organization_id: { type: ['string', 'null'] },
              device: { $ref: 'DeviceDetail#' },
            },
          },
          ...errors(400, 401, 403, 404, 409, 410, 429),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const { device, eventId, status } = await devices.claim(who.userId, req.body)
      return { success: true, status, eventId, organization_id: device.organizationId, device: toDeviceDetail(device) }
    },
  )

  app.post(
    '/api/device/deny',
    {
      schema: {
        tags,
        summary: 'Deny a pairing request',
        security: callerSecurity,
        body: codeBody,
        response: {
          200: { type: 'object', properties: { success: { type: 'boolean' }, status: { type: 'string' }, deviceId: { type: 'string' } } },
          ...errors(400, 401, 404, 409, 410, 429),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      return devices.deny(who.userId, req.body)
    },
  )

  app.post(
    '/api/device/get-init-device',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Get the initialisation record of a device',
        description:
          'Polled by the device. Once approved, the answer carries the MQTT credentials exactly once. Fields this service does not know are ignored.',
        body: Type.Object(
          { deviceId, deviceCode: Type.String({ minLength: 1, maxLength: 64 }) },
          { additionalProperties: true, examples: [{ deviceId: exampleIds.deviceId, deviceCode: exampleIds.deviceCode }] },
        ),
        response: { 200: { $ref: 'DeviceInitRecord#' }, ...errors(400, 404, 429) },
      },
    },
    async (req) => devices.poll(req.body.deviceId, req.body.deviceCode),
  )

  app.post(
    '/api/device/disconnect',
    {
      schema: {
        tags,
        summary: 'Disconnect device',
        description: 'Revokes the device secret and ends its MQTT session. The device can pair again.',
        security: callerSecurity,
        body: idBody,
        response: {
          200: {
            type: 'object',
            properties: {
              success: { type: 'boolean' },
              message: { type: 'string' },
              kicked: { type: 'boolean' },
              device: { $ref: 'Device#' },
            },
          },
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const { device, kicked } = await devices.disconnect(who.userId, req.body.deviceId)
      return { success: true, message: 'Device disconnected and its credentials revoked', kicked, device: toDeviceRecord(device) }
    },
  )

  app.delete(
    '/api/device/delete',
    {
      schema: {
        tags,
        summary: 'Delete a device',
        description: 'Permanently deletes a device and everything that hangs off it.',
        security: [{ jwtAuth: [] }, { bearerAuth: [] }, { cookieAuth: [] }, { apiKeyAuth: [] }],
        body: idBody,
        response: {
          200: {
            type: 'object',
            required: ['success', 'message', 'device'],
            properties: { success: { type: 'boolean' }, message: { type: 'string' }, device: { $ref: 'Device#' } },
          },
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const deleted = await devices.remove(who.userId, req.body.deviceId)
      return { success: true, message: 'Device deleted', device: toDeviceRecord(deleted) }
    },
  )

  app.get(
    '/api/device',
    {
      schema: {
        tags,
        summary: "The caller's devices and those of an organization",
        description:
          "Newest first. Organization devices come from `organizationId` (the caller must be a member) or else the session's active organization; a JWT has no active organization, so it names one.",
        security: callerSecurity,
        querystring: Type.Object(
          {
            organizationId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            limit: Defaulted(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
            cursor: Type.Optional(Type.String({ maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: {
            type: 'object',
            required: ['devices', 'nextCursor'],
            properties: {
              devices: { type: 'array', items: { $ref: 'DeviceDetail#' } },
              unreadable: {
                type: 'array',
                description:
                  'Devices whose stored record cannot be read, left out of `devices` (never a failed list): each with the way to repair it',
                items: {
                  type: 'object',
                  required: ['id', 'name', 'code', 'message'],
                  properties: { id: { type: 'string' }, name: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
                },
              },
              nextCursor: { type: ['string', 'null'], description: 'pass as `cursor` for the next page' },
            },
          },
          ...errors(400, 401, 403),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      let orgId: string | null = null
      if (req.query.organizationId) {
        if (!(await findMemberRole(db, req.query.organizationId, who.userId)))
          throw appError('FORBIDDEN', 'You are not a member of this organization')
        orgId = req.query.organizationId
      } else if (who.activeOrganizationId && (await findMemberRole(db, who.activeOrganizationId, who.userId))) {
        orgId = who.activeOrganizationId
      }
      const rows = await listDevices(db, who.userId, orgId, req.query.limit + 1, cursorFrom(req.query.cursor))
      const { page, nextCursor } = pageOf(rows, req.query.limit)
      const unreadable = page.flatMap((d) => {
        const why = unreadableRecord(d)
        return why ? [{ id: d.id, name: d.name, code: 'DEVICE_RECORD_UNREADABLE', message: unreadableMessage(d, why) }] : []
      })
      const devices = page.filter((d) => !unreadable.some((u) => u.id === d.id)).map(toDeviceDetail)
      return { devices, nextCursor, ...(unreadable.length ? { unreadable } : {}) }
    },
  )

  const idParams = Type.Object({ id: deviceId })
  const readable = deviceAccess(db, 'read')
  const managed = deviceAccess(db, 'manage')

  /** A device as answered, or the 4xx that says how to repair a record that cannot be read. */
  const readableDetail = (d: Parameters<typeof toDeviceDetail>[0]) => {
    const why = unreadableRecord(d)
    if (why) throw appError('DEVICE_RECORD_UNREADABLE', unreadableMessage(d, why))
    return toDeviceDetail(d)
  }

  app.get(
    '/api/device/:id',
    {
      schema: {
        tags,
        summary: 'Get a device',
        security: callerSecurity,
        params: idParams,
        response: { 200: { $ref: 'DeviceDetail#' }, ...errors(401, 404, 409) },
      },
      preHandler: readable,
    },
    async (req) => readableDetail(deviceOf(req)),
  )

  app.patch(
    '/api/device/:id',
    {
      schema: {
        tags,
        summary: 'Change a device',
        security: callerSecurity,
        params: idParams,
        body: patchBody,
        response: { 200: { $ref: 'DeviceDetail#' }, ...errors(400, 401, 403, 404, 409) },
      },
      preHandler: managed,
    },
    async (req) => {
      // Refused before storing: a PATCH cannot repair the panel's size or palette, and a change
      // stored behind a 409 would look to the caller like one that failed.
      readableDetail(deviceOf(req))
      return readableDetail(await devices.patch(deviceOf(req), req.body))
    },
  )

  app.post(
    '/api/device/:id/command',
    {
      schema: {
        tags,
        summary: 'Send a command to a device',
        description:
          'Published with QoS 1 to devices/{id}/cmd; a sleeping device gets it when it reconnects. Its ack is recorded against the command id.',
        security: callerSecurity,
        params: idParams,
        body: commandBody,
        response: {
          202: {
            type: 'object',
            required: ['commandId', 'status'],
            properties: { commandId: { type: 'string' }, status: { type: 'string' }, command: { type: 'string' } },
          },
          ...errors(400, 401, 403, 404),
        },
      },
      preHandler: [async (req) => void commandArgs(req.body), managed],
    },
    async (req, reply) => {
      const row = await devices.sendCommand(principalOf(req).userId, deviceOf(req), req.body.command, commandArgs(req.body))
      return reply.code(202).send({ commandId: row.id, status: row.status, command: row.command })
    },
  )

  app.get(
    '/api/device/:id/events',
    {
      schema: {
        tags,
        summary: "A device's events, newest first",
        security: callerSecurity,
        params: idParams,
        querystring: Type.Object(
          {
            limit: Defaulted(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
            cursor: Type.Optional(Type.String({ maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: {
            type: 'object',
            required: ['events', 'nextCursor'],
            properties: { events: { type: 'array', items: { $ref: 'Event#' } }, nextCursor: { type: ['string', 'null'] } },
          },
          ...errors(400, 401, 404),
        },
      },
      preHandler: readable,
    },
    async (req) => {
      const rows = await listDeviceEvents(db, deviceOf(req).id, req.query.limit + 1, cursorFrom(req.query.cursor))
      const { page, nextCursor } = pageOf(rows, req.query.limit)
      return { events: page.map(toEventRecord), nextCursor }
    },
  )
}
