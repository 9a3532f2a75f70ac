import { errorResponses as errors, callerSecurity as security, cursorFrom } from '../http/route-schemas.js'
import { pageOf } from '../db/paging.js'
import { principalOf } from '../auth/route-auth.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { deviceAccess, deviceOf } from '../devices/route-access.js'
import { promptInputSchema, toPromptRecord } from './records.js'
import { listDevicePrompts } from './repository.js'
import type { PromptService } from './service.js'
import { Defaulted, SharedRef } from '../http/typebox.js'
import { TEMPLATES } from './templates.js'
import { exampleIds } from '../openapi/examples.js'

// The interface lists prompts in its device module and in its admin API.
const tags = ['device module', 'admin API']

export async function promptRoutes(fastify: FastifyInstance, opts: { auth: Auth; db: Database; prompts: PromptService }) {
  // Request types are inferred from the TypeBox schemas below.
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db, prompts } = opts

  app.post(
    '/api/prompts',
    {
      schema: {
        tags,
        summary: 'Create a new prompt',
        description: 'Stores the prompt; when a device is named it is published to devices/{id}/prompt.',
        security,
        body: SharedRef(promptInputSchema, {
          examples: [{ text: 'A lighthouse on a cliff at dawn', template: 'watercolor', deviceId: exampleIds.deviceId }],
        }),
        response: { 201: { $ref: 'Prompt#' }, ...errors(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      const who = principalOf(req)
      return reply.code(201).send(toPromptRecord(await prompts.create(who.userId, req.body)))
    },
  )

  app.get(
    '/api/prompts/device/:deviceId',
    {
      schema: {
        tags,
        summary: 'Get prompts by device ID',
        description: 'Newest first, cursor-paginated.',
        security,
        params: Type.Object({ deviceId: Type.String({ minLength: 1, maxLength: 64 }) }),
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
            required: ['prompts', 'nextCursor'],
            properties: { prompts: { type: 'array', items: { $ref: 'Prompt#' } }, nextCursor: { type: ['string', 'null'] } },
          },
          ...errors(400, 401, 404),
        },
      },
      preHandler: deviceAccess(db, 'read', 'deviceId'),
    },
    async (req) => {
      const rows = await listDevicePrompts(db, deviceOf(req).id, req.query.limit + 1, cursorFrom(req.query.cursor))
      const { page, nextCursor } = pageOf(rows, req.query.limit)
      return { prompts: page.map(toPromptRecord), nextCursor }
    },
  )

  app.get(
    '/api/prompts/templates',
    {
      config: { auth: 'none' },
      schema: { tags, summary: 'Prompt templates, usable by name when creating a prompt', response: { 200: { $ref: 'PromptTemplates#' } } },
    },
    async () => ({ templates: TEMPLATES }),
  )
}
