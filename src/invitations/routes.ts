// GET /accept-invitation/:id (the page an invitation e-mail links to) and
// POST /api/invitations/accept (what its Accept button calls).
import { callerOf } from '../auth/route-auth.js'
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import type { Auth } from '../auth/auth.js'
import { findCaller, toHeaders } from '../auth/guard.js'
import type { Database } from '../db/client.js'
import { exampleIds } from '../openapi/examples.js'
import { closedPage, invitationPage, notFoundPage } from './page.js'
import { findInvitationDetails } from './repository.js'
import { acceptInvitation, stateOf } from './service.js'

const err = { $ref: 'Error#' }
const tags = ['admin API']
const idParam = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' })
const params = Type.Object({ id: idParam })
const acceptBody = Type.Object(
  { invitationId: idParam },
  { additionalProperties: false, examples: [{ invitationId: exampleIds.invitationId }] },
)

export async function invitationRoutes(app: FastifyInstance, opts: { auth: Auth; db: Database }) {
  const { auth, db } = opts

  // Static types rather than the TypeBox type provider: the page answers HTML, which the provider
  // would check against its string response schemas.
  app.get<{ Params: Static<typeof params> }>(
    '/accept-invitation/:id',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'The page an invitation e-mail links to: sign in, then accept',
        params,
        response: {
          200: { type: 'string', description: 'text/html' },
          404: { type: 'string' },
          409: { type: 'string' },
          410: { type: 'string' },
        },
      },
    },
    async (req, reply) => {
      reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
      const inv = await findInvitationDetails(db, req.params.id)
      if (!inv) return reply.code(404).send(notFoundPage())
      const state = stateOf(inv)
      if (state !== 'pending') return reply.code(state === 'expired' ? 410 : 409).send(closedPage(inv, state))
      return reply.send(invitationPage(inv, await findCaller(auth, req)))
    },
  )

  app.post<{ Body: Static<typeof acceptBody> }>(
    '/api/invitations/accept',
    {
      schema: {
        tags,
        summary: 'Accept organization invitation',
        description: "Accepts an invitation for the signed-in user; their e-mail must be the invitation's and verified.",
        security: [{ bearerAuth: [] }, { cookieAuth: [] }],
        body: acceptBody,
        response: {
          200: {
            type: 'object',
            required: ['success', 'organization', 'member'],
            properties: {
              success: { type: 'boolean' },
              organization: {
                type: 'object',
                required: ['id', 'name', 'slug'],
                properties: { id: { type: 'string' }, name: { type: 'string' }, slug: { type: 'string' } },
              },
              member: {
                type: 'object',
                required: ['id', 'organizationId', 'userId', 'role'],
                properties: {
                  id: { type: 'string' },
                  organizationId: { type: 'string' },
                  userId: { type: 'string' },
                  role: { type: 'string' },
                },
              },
            },
          },
          400: err,
          401: err,
          403: err,
          404: err,
          409: err,
          410: err,
        },
      },
    },
    async (req, reply) => {
      const who = callerOf(req)
      const result = await acceptInvitation({ auth, db, who, headers: toHeaders(req), invitationId: req.body.invitationId })
      if (result.setCookies.length) reply.header('set-cookie', result.setCookies)
      const m = result.member as { id: string; organizationId: string; userId: string; role: string }
      return {
        success: true,
        organization: {
          id: result.invitation.organizationId,
          name: result.invitation.organizationName,
          slug: result.invitation.organizationSlug,
        },
        member: { id: m.id, organizationId: m.organizationId, userId: m.userId, role: m.role },
      }
    },
  )
}
