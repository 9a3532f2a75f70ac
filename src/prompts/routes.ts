import { errorResponses as errors, callerSecurity as security, cursorFrom } from '../http/route-schemas.js'
import { pageOf } from '../db/paging.js'
import { principalOf } from '../auth/route-auth.js'
import type { FastifyInstance } from 'fastify'
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { requireAccess } from '../devices/access.js'
import { findDevice } from '../devices/repository.js'
import { toPromptRecord } from './records.js'
import { listDevicePrompts } from './repository.js'
import type { PromptInput, PromptService } from './service.js'
import { TEMPLATES } from './templates.js'

// The interface lists prompts in its device module and in its admin API.
const tags = ['device module', 'admin API']

export async function promptRoutes(app: FastifyInstance, opts: { auth: Auth; db: Database; prompts: PromptService }) {
  const { auth, db, prompts } = opts

  app.post<{ Body: PromptInput }>(
    '/api/prompts',
    {
      schema: {
        tags,
        summary: 'Create a new prompt',
        description: 'Stores the prompt; when a device is named it is published to devices/{id}/prompt.',
        security,
        body: { $ref: 'PromptInput#' },
        response: { 201: { $ref: 'Prompt#' }, ...errors(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      const who = principalOf(req)
      return reply.code(201).send(toPromptRecord(await prompts.create(who.userId, req.body)))
    },
  )

  app.get<{ Params: { deviceId: string }; Querystring: { limit: number; cursor?: string } }>(
    '/api/prompts/device/:deviceId',
    {
      schema: {
        tags,
        summary: 'Get prompts by device ID',
        description: 'Newest first, cursor-paginated.',
        security,
        params: { type: 'object', required: ['deviceId'], properties: { deviceId: { type: 'string', minLength: 1, maxLength: 64 } } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, cursor: { type: 'string', maxLength: 200 } },
        },
        response: {
          200: { type: 'object', required: ['prompts', 'nextCursor'], properties: { prompts: { type: 'array', items: { $ref: 'Prompt#' } }, nextCursor: { type: ['string', 'null'] } } },
          ...errors(400, 401, 404),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const dev = await requireAccess(db, await findDevice(db, req.params.deviceId), who.userId, 'read')
      const rows = await listDevicePrompts(db, dev.id, req.query.limit + 1, cursorFrom(req.query.cursor))
      const { page, nextCursor } = pageOf(rows, req.query.limit)
      return { prompts: page.map(toPromptRecord), nextCursor }
    },
  )

  app.get(
    '/api/prompts/templates',
    { config: { auth: 'none' }, schema: { tags, summary: 'Prompt templates, usable by name when creating a prompt', response: { 200: { $ref: 'PromptTemplates#' } } } },
    async () => ({ templates: TEMPLATES }),
  )
}
