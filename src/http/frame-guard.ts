// No page of this service may be shown inside another site's frame: a framed page can be clicked
// through an overlay (clickjacking), and one click on a framed /accept-invitation/:id joined a
// signed-in victim to an attacker's organization from a sibling origin, where the cookie goes
// along. Every HTML answer, ours, the docs page's and Better Auth's, says so twice: CSP
// `frame-ancestors 'none'` for current browsers and `X-Frame-Options: DENY` for older ones.
import type { FastifyInstance } from 'fastify'

const HTML = /^\s*(text\/html|application\/xhtml\+xml)\b/i
const FRAME_ANCESTORS = "frame-ancestors 'none'"

/** The policy with its frame-ancestors directive, if any, replaced by 'none' (or 'none' added). */
function withoutFraming(policy: string | undefined): string {
  if (!policy?.trim()) return FRAME_ANCESTORS
  const kept = policy
    .split(';')
    .map((d) => d.trim())
    .filter((d) => d && !/^frame-ancestors(\s|$)/i.test(d))
  return [...kept, FRAME_ANCESTORS].join('; ')
}

/** Registered on the root instance before any plugin, so every route and error answer has it. */
export function forbidFraming(app: FastifyInstance): void {
  app.addHook('onSend', async (_req, reply, payload) => {
    if (!HTML.test(String(reply.getHeader('content-type') ?? ''))) return payload
    const csp = reply.getHeader('content-security-policy')
    reply.header('content-security-policy', withoutFraming(Array.isArray(csp) ? csp.join('; ') : csp?.toString()))
    reply.header('x-frame-options', 'DENY')
    return payload
  })
}
