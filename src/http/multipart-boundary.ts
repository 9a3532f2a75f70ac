// A multipart body's boundary is checked before any route's parser reads it: busboy throws on a
// boundary over 256 bytes ("The needle cannot have a length bigger than 256") from a place the
// routes cannot catch, which was a 500 on every multipart route (uploads, firmware). RFC 2046
// section 5.1.1 allows 1 to 70 characters of a small set; anything else is 400 INVALID_MULTIPART.
import type { FastifyInstance, FastifyRequest, preParsingHookHandler } from 'fastify'
import { appError } from '../errors.js'

const MULTIPART = /^\s*multipart\//i
/** RFC 2046 bchars, the last one not a space. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/

/** The boundary parameter of a Content-Type, unquoted; undefined when there is none. */
function boundaryOf(contentType: string): string | undefined {
  const m = /;\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/i.exec(contentType)
  if (!m) return undefined
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]
}

async function checkBoundary(req: FastifyRequest) {
  const type = req.headers['content-type']
  if (!type || !MULTIPART.test(type)) return
  const boundary = boundaryOf(type)
  if (boundary === undefined || !BOUNDARY.test(boundary))
    throw appError('INVALID_MULTIPART', 'A multipart body needs a boundary of 1 to 70 characters (RFC 2046)')
}

/**
 * Every route gets the check as its last preParsing hook: after the route's own credential check
 * (src/auth/route-auth.ts), so an anonymous request is still 401 whatever it sends.
 */
export function checkMultipartBoundaries(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const hooks = route.preParsing === undefined ? [] : Array.isArray(route.preParsing) ? route.preParsing : [route.preParsing]
    route.preParsing = [...hooks, checkBoundary as preParsingHookHandler]
  })
}
