// Image generation (start, then poll), models and credits.
import { errorResponses as errors, callerSecurity as security } from '../http/route-schemas.js'
import { principalOf } from '../auth/route-auth.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Auth } from '../auth/auth.js'
import { findUserById } from '../auth/users-repository.js'
import { balanceOf, credit, listLedger } from '../credits/repository.js'
import type { Database } from '../db/client.js'
import { appError } from '../errors.js'
import { MODELS } from './models.js'
import { generationRequestSchema, toGenerationResponse } from './records.js'
import type { GenerationService } from './service.js'
import { SharedRef } from '../http/typebox.js'
import { exampleIds, grace } from '../openapi/examples.js'

const idParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })

export async function generationRoutes(
  fastify: FastifyInstance,
  opts: {
    auth: Auth
    db: Database
    generation: GenerationService
    baseUrl: string
    providers: Set<string>
    balanceChanged?: () => Promise<void>
  },
) {
  // Request types are inferred from the TypeBox schemas below.
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db, generation, baseUrl } = opts

  app.post(
    '/api/generate',
    {
      schema: {
        tags: ['admin API'],
        summary: 'Generate image with the image-generation provider',
        description:
          'Starts a job and answers 202 at once; poll GET /api/generate/{id}. The model price is taken from the balance now and refunded if the job fails or is canceled.',
        security,
        body: SharedRef(generationRequestSchema, {
          examples: [
            { prompt: { text: 'A lighthouse on a cliff at dawn', template: 'watercolor' }, deviceId: exampleIds.deviceId, model: 'local' },
          ],
        }),
        response: { 202: { $ref: 'ImageGenerationResponse#' }, ...errors(400, 401, 402, 403, 404) },
      },
    },
    async (req, reply) => {
      const who = principalOf(req)
      const job = await generation.create(who.userId, req.body)
      return reply.code(202).header('location', `/api/generate/${job.id}`).send(toGenerationResponse(baseUrl, job))
    },
  )

  app.get(
    '/api/generate/:id',
    {
      schema: {
        tags: ['admin API'],
        summary: 'Poll for generation result',
        security,
        params: idParams,
        response: { 200: { $ref: 'ImageGenerationResponse#' }, ...errors(401, 404) },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const { job, image, variants } = await generation.get(who.userId, req.params.id)
      return toGenerationResponse(baseUrl, job, image, variants)
    },
  )

  app.post(
    '/api/generate/:id/cancel',
    {
      schema: {
        tags: ['admin API'],
        summary: 'Cancel a generation job',
        description: 'The price is refunded.',
        security,
        params: idParams,
        response: { 200: { $ref: 'ImageGenerationResponse#' }, ...errors(401, 404, 409) },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const { job, image, variants } = await generation.cancel(who.userId, req.params.id)
      return toGenerationResponse(baseUrl, job, image, variants)
    },
  )

  app.get(
    '/api/models',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['admin API'],
        summary: 'Models, their prices and whether this service can use them',
        response: {
          200: {
            type: 'object',
            properties: {
              models: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    id: { type: 'string' },
                    title: { type: 'string' },
                    provider: { type: 'string' },
                    price: { type: 'string' },
                    available: { type: 'boolean' },
                  },
                },
              },
            },
          },
        },
      },
    },
    async () => ({
      models: MODELS.map((m) => ({
        id: m.id,
        title: m.title,
        provider: m.provider,
        price: m.price,
        available: opts.providers.has(m.provider),
      })),
    }),
  )

  const ledgerEntry = {
    type: 'object',
    properties: {
      id: { type: 'string' },
      amount: { type: 'string' },
      balanceAfter: { type: 'string' },
      reason: { type: 'string' },
      jobId: { type: ['string', 'null'] },
      note: { type: ['string', 'null'] },
      created_at: { type: 'string', format: 'date-time' },
    },
  } as const

  app.get(
    '/api/credits',
    {
      schema: {
        tags: ['admin API'],
        summary: "The caller's balance and its latest ledger entries",
        security,
        response: {
          200: { type: 'object', properties: { balance: { type: 'string' }, ledger: { type: 'array', items: ledgerEntry } } },
          ...errors(401),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const rows = await listLedger(db, who.userId, 50)
      return {
        balance: (await balanceOf(db, who.userId)) ?? '0',
        ledger: rows.map((r) => ({
          id: r.id,
          amount: r.amount,
          balanceAfter: r.balanceAfter,
          reason: r.reason,
          jobId: r.jobId,
          note: r.note,
          created_at: r.createdAt.toISOString(),
        })),
      }
    },
  )

  app.post(
    '/api/admin/credits',
    {
      schema: {
        tags: ['admin API'],
        summary: "Credit a user's balance (admins only)",
        security,
        body: Type.Object(
          {
            userId: Type.String({ minLength: 1, maxLength: 64 }),
            amount: Type.String({
              pattern: '^(?:0|[1-9]\\d{0,9})(?:\\.\\d{1,2})?$',
              description: 'positive credits, at most two decimals',
            }),
            note: Type.Optional(Type.String({ maxLength: 200 })),
          },
          { additionalProperties: false, examples: [{ userId: grace.id, amount: '25.00', note: 'Welcome credit' }] },
        ),
        response: {
          200: { type: 'object', properties: { userId: { type: 'string' }, balance: { type: 'string' } } },
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (req) => {
      const who = principalOf(req)
      const actor = await findUserById(db, who.userId)
      if (!actor?.role.split(',').includes('admin')) throw appError('FORBIDDEN', 'Only admins may credit accounts')
      if (Number(req.body.amount) <= 0) throw appError('VALIDATION_ERROR', 'amount must be positive')
      const balance = await db.transaction((tx) =>
        credit(tx, req.body.userId, req.body.amount, { reason: 'admin_credit', actorId: who.userId, note: req.body.note }),
      )
      if (balance === null) throw appError('USER_NOT_FOUND')
      await opts.balanceChanged?.()
      return { userId: req.body.userId, balance }
    },
  )
}
