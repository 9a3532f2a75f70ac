// GET /device: the verification_uri a device shows (and, with ?user_code=, the link its QR code
// encodes). The pairing screen is the web console's: this sends the browser there with the code,
// and the console asks the person to sign in first if they are not.
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'

const query = Type.Object({
  user_code: Type.Optional(
    Type.String({
      maxLength: 64,
      description: "the code from the QR link: the pin the display shows (or, in older links, the device's userCode UUID)",
    }),
  ),
  code: Type.Optional(Type.String({ maxLength: 16, description: 'the pin code the display shows (XXXX-XXXX)' })),
})

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export async function verificationPage(app: FastifyInstance) {
  app.get(
    '/device',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['device module'],
        summary: "Where a device's pairing link leads: the console's pairing screen",
        description:
          'Redirects to /pair in the web console, carrying the code: `user_code` (the pin, as `code`; a UUID as `userCode`) or `code`.',
        querystring: query,
        response: { 302: { type: 'null', description: 'to /pair' } },
      },
    },
    async (req, reply) => {
      const q = req.query as { user_code?: string; code?: string }
      const params = new URLSearchParams()
      const code = q.user_code ?? q.code
      if (code) params.set(UUID.test(code) ? 'userCode' : 'code', code)
      const search = params.size ? `?${params}` : ''
      return reply.redirect(`/pair${search}`, 302)
    },
  )
}
