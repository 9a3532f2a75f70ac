// HTTP routes of the notification module: the VAPID public key, a user's push subscriptions,
// sending, and preferences.
import { errorResponses as errors, callerSecurity as security } from '../http/route-schemas.js'
import { principalOf } from '../auth/route-auth.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { accessibleDevice, rolesOf } from '../devices/access.js'
import { findDevice } from '../devices/repository.js'
import { findUserById } from '../auth/users-repository.js'
import { appError } from '../errors.js'
import { StringEnum } from '../http/typebox.js'
import { pushSubscription } from '../openapi/examples.js'
import { subscriptionBody } from './inputs.js'
import type { PushSubscriptionRow } from './repository.js'
import type { Notifier } from './service.js'

const tags = ['admin API']

const subscriptionRecord = {
  type: 'object',
  required: ['id', 'endpoint', 'expirationTime', 'userAgent', 'createdAt', 'lastSuccessAt'],
  properties: {
    id: { type: 'string' },
    endpoint: { type: 'string' },
    expirationTime: { type: ['string', 'null'], format: 'date-time' },
    userAgent: { type: ['string', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    lastSuccessAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const
const preferencesRecord = Type.Object({
  generationResults: Type.Boolean({ description: 'notify when an image generation finishes or fails' }),
  devicePresence: Type.Boolean({ description: 'notify when a device goes online or offline' }),
  batteryLow: Type.Boolean({ description: 'notify when a device’s battery falls under 15 % (again only after it was above 25 %)' }),
  deviceSilent: Type.Boolean({ description: 'notify when a device has not reported for three of its report intervals' }),
  firmwareFailed: Type.Boolean({ description: 'notify when a firmware update of a device failed' }),
})

const toSubscription = (s: PushSubscriptionRow) => ({
  id: s.id,
  endpoint: s.endpoint,
  expirationTime: s.expirationTime?.toISOString() ?? null,
  userAgent: s.userAgent,
  createdAt: s.createdAt.toISOString(),
  lastSuccessAt: s.lastSuccessAt?.toISOString() ?? null,
})

export async function notificationRoutes(fastify: FastifyInstance, opts: { auth: Auth; db: Database; notifier: Notifier }) {
  // Request types are inferred from the TypeBox schemas below.
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db, notifier } = opts
  const caller = async (req: FastifyRequest) => principalOf(req)

  app.get(
    '/api/notifications/vapid-public-key',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: "The VAPID public key, for the browser's pushManager.subscribe({ applicationServerKey })",
        response: {
          200: {
            type: 'object',
            required: ['publicKey'],
            properties: { publicKey: { type: 'string', description: 'base64url, 65-byte uncompressed P-256 point' } },
          },
        },
      },
    },
    async () => ({ publicKey: notifier.vapidPublicKey }),
  )

  app.get(
    '/api/notifications/subscriptions',
    {
      schema: {
        tags,
        summary: "The caller's push subscriptions",
        security,
        response: {
          200: { type: 'object', required: ['subscriptions'], properties: { subscriptions: { type: 'array', items: subscriptionRecord } } },
          ...errors(401),
        },
      },
    },
    async (req) => {
      const who = await caller(req)
      return { subscriptions: (await notifier.list(who.userId)).map(toSubscription) }
    },
  )

  app.post(
    '/api/notifications/subscriptions',
    {
      schema: {
        tags,
        summary: 'Subscribe this browser to notifications',
        description:
          "The body is the browser's PushSubscription as JSON (subscription.toJSON()). Subscribing an endpoint again updates it (201 the first time, 200 after).",
        security,
        body: subscriptionBody,
        response: { 200: subscriptionRecord, 201: subscriptionRecord, ...errors(400, 401) },
      },
    },
    async (req, reply) => {
      const who = await caller(req)
      const { row, created } = await notifier.subscribe(who.userId, req.body, req.headers['user-agent'] ?? null)
      return reply.code(created ? 201 : 200).send(toSubscription(row))
    },
  )

  app.delete(
    '/api/notifications/subscriptions',
    {
      schema: {
        tags,
        summary: 'Unsubscribe one of your push subscriptions, by id or endpoint',
        security,
        body: Type.Object(
          {
            id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            endpoint: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
          },
          { minProperties: 1, maxProperties: 1, additionalProperties: false, examples: [{ endpoint: pushSubscription.endpoint }] },
        ),
        response: {
          200: { type: 'object', required: ['success', 'id'], properties: { success: { type: 'boolean' }, id: { type: 'string' } } },
          ...errors(400, 401, 404),
        },
      },
    },
    async (req) => {
      const who = await caller(req)
      const row = await notifier.unsubscribe(who.userId, req.body)
      return { success: true, id: row.id }
    },
  )

  app.post(
    '/api/notifications/send',
    {
      schema: {
        tags,
        summary: 'Send notification via the push-notification service',
        description:
          'Sends to every push subscription of the target user: yourself by default, the owner of `deviceId` (a device you may see), or `userId` (admins only, or yourself). ' +
          "Subscriptions the push service answers 404/410 for are removed. The JSON message must fit the protocol's 4 KiB encrypted body (413 otherwise).",
        security,
        body: Type.Object(
          {
            title: Type.String({ minLength: 1, maxLength: 4000 }),
            body: Type.String({ maxLength: 4000 }),
            url: Type.Optional(
              Type.String({
                maxLength: 2048,
                pattern: '^(/|https?://)',
                description: 'opened when the notification is clicked: a path or an http(s) URL',
              }),
            ),
            deviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            userId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            urgency: Type.Optional(StringEnum(['very-low', 'low', 'normal', 'high'])),
            ttl: Type.Optional(
              Type.Integer({ minimum: 0, maximum: 2419200, description: 'seconds the push service keeps an undelivered message' }),
            ),
          },
          {
            additionalProperties: false,
            examples: [{ title: 'Dinner is ready', body: 'Come to the kitchen, it is getting cold.', url: '/devices', urgency: 'high' }],
          },
        ),
        response: {
          200: {
            type: 'object',
            required: ['userId', 'sent', 'failed', 'removed', 'results'],
            properties: {
              userId: { type: 'string' },
              sent: { type: 'integer' },
              failed: { type: 'integer' },
              removed: { type: 'integer', description: 'subscriptions removed because the push service no longer knows them' },
              results: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['subscriptionId', 'status', 'statusCode', 'attempts'],
                  properties: {
                    subscriptionId: { type: 'string' },
                    endpointOrigin: { type: 'string' },
                    status: { type: 'string', enum: ['sent', 'gone', 'failed'] },
                    statusCode: { type: ['integer', 'null'] },
                    attempts: { type: 'integer' },
                    error: { type: 'string' },
                  },
                },
              },
            },
          },
          ...errors(400, 401, 403, 404, 413),
        },
      },
    },
    async (req) => {
      const who = await caller(req)
      const { title, body, url, deviceId, userId, urgency, ttl } = req.body
      if (deviceId && userId) throw appError('VALIDATION_ERROR', 'Give deviceId or userId, not both')
      const isAdmin = rolesOf((await findUserById(db, who.userId))?.role ?? null).includes('admin')
      let target = who.userId
      if (deviceId) {
        const dev = isAdmin ? await findDevice(db, deviceId) : undefined
        if (dev) target = dev.userId
        else {
          // Others reach only themselves: the device must be one they may see (404 otherwise, like
          // the device routes) and their own; an organization device of someone else is 403.
          const seen = await accessibleDevice(db, deviceId, who.userId, 'read')
          if (seen.userId !== who.userId) throw appError('FORBIDDEN', "Only admins may notify another device's owner")
        }
      } else if (userId && userId !== who.userId) {
        if (!isAdmin) throw appError('FORBIDDEN', 'Only admins may notify other users')
        if (!(await findUserById(db, userId))) throw appError('USER_NOT_FOUND', 'No such user')
        target = userId
      }
      return notifier.sendToUser(target, 'message', { title, body, url }, { urgency, ttl })
    },
  )

  app.get(
    '/api/notifications/preferences',
    { schema: { tags, summary: 'What you are notified about', security, response: { 200: preferencesRecord, ...errors(401) } } },
    async (req) => notifier.preferences((await caller(req)).userId),
  )

  app.patch(
    '/api/notifications/preferences',
    {
      schema: {
        tags,
        summary: 'Change what you are notified about',
        security,
        body: Type.Partial(preferencesRecord, { minProperties: 1, additionalProperties: false, examples: [{ devicePresence: false }] }),
        response: { 200: preferencesRecord, ...errors(400, 401) },
      },
    },
    async (req) => notifier.updatePreferences((await caller(req)).userId, req.body),
  )
}
