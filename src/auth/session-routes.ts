// GET /get-session and GET /error at the root, in the interface's own shapes.
import { callerOf } from './route-auth.js'
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import type { Database } from '../db/client.js'
import type { Auth } from './auth.js'
import { toSessionRecord, toUserRecord } from './session-shape.js'

const errorResponses = { 401: { $ref: 'Error#' }, 403: { $ref: 'Error#' }, 429: { $ref: 'Error#' } }

const errorQuery = Type.Object({ error: Type.Optional(Type.String({ maxLength: 200 })) })

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string)

export async function sessionRoutes(app: FastifyInstance, _opts: { auth: Auth; db: Database }) {
  app.get(
    '/get-session',
    {
      schema: {
        tags: ['default'],
        summary: 'Get the current session',
        security: [{ bearerAuth: [] }, { cookieAuth: [] }],
        response: {
          200: {
            type: 'object',
            required: ['session', 'user'],
            properties: { session: { $ref: 'Session#' }, user: { $ref: 'User#' } },
          },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      // The user row comes from the database (through the session cache), not Better Auth's
      // session storage, which may hold a stale copy of balance, role or ban.
      const caller = callerOf(req)
      return { session: toSessionRecord(caller.session), user: toUserRecord(caller.user) }
    },
  )

  // Static types rather than the TypeBox type provider: the page answers HTML.
  app.get<{ Querystring: Static<typeof errorQuery> }>(
    '/error',
    {
      schema: {
        tags: ['default'],
        summary: 'Error page',
        // The interface sends a bearer token with it; the page is shown with or without one.
        security: [{}, { bearerAuth: [] }, { cookieAuth: [] }],
        querystring: errorQuery,
        response: { 200: { type: 'string', description: 'text/html' }, 400: { $ref: 'Error#' } },
      },
    },
    async (req, reply) => {
      const raw = req.query.error ?? 'unknown_error'
      const code = escapeHtml(raw)
      const text = escapeHtml(raw.replace(/[_-]+/g, ' '))
      reply.type('text/html; charset=utf-8')
      return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Something went wrong</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}code{background:#f2f2f2;padding:.1rem .3rem;border-radius:3px}</style>
</head><body><h1>Something went wrong</h1><p>${text}</p><p>Error code: <code>${code}</code></p><p><a href="/">Back to the start</a></p></body></html>`
    },
  )
}
