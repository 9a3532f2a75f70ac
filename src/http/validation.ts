// Request bodies before validation: the JSON parser (depth limit, prototype poisoning, NUL).
import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { type AppError, appError } from '../errors.js'

/**
 * JSON bodies: an empty body with a JSON content type is no body (clients often send the header
 * on a bodyless POST such as cancel); prototype-poisoning keys are refused as Fastify does.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim()
    if (!text) return done(null, undefined)
    if (nestingDepth(text) > MAX_JSON_DEPTH) return done(tooDeepError(), undefined)
    let value: unknown
    try {
      value = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' })
    } catch {
      return done(Object.assign(new Error('Malformed JSON body'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), undefined)
    }
    if (hasNulCharacter(value)) return done(nulError(), undefined)
    done(null, value)
  })
  // A NUL in a path or query string would reach the database the same way.
  app.addHook('onRequest', async (req) => {
    if (/%00/i.test(req.url)) throw nulError()
  })
}

/** No request of this API nests deeper; a deeper body is refused before anything walks it. */
export const MAX_JSON_DEPTH = 64

/**
 * How deeply the arrays and objects of a JSON text nest, read in one pass over the text without
 * parsing it (so 20,000 levels cost a loop, not a stack). Brackets inside strings do not count.
 * Stops counting once past MAX_JSON_DEPTH.
 */
export function nestingDepth(text: string): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) max = depth
      if (max > MAX_JSON_DEPTH) return max
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return max
}

export function tooDeepError(): AppError {
  return appError('BODY_TOO_DEEP', `JSON may nest arrays and objects at most ${MAX_JSON_DEPTH} levels deep`)
}

/**
 * PostgreSQL text cannot hold U+0000: a string carrying one fails in the database, as a 500.
 * No field of this service has a use for it, so it is refused where requests are parsed. Walks
 * with its own stack, never recursion, whatever the depth.
 */
export function hasNulCharacter(value: unknown): boolean {
  const stack: unknown[] = [value]
  while (stack.length) {
    const v = stack.pop()
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item)
    } else if (v && typeof v === 'object') {
      for (const [key, item] of Object.entries(v)) {
        if (key.includes('\u0000')) return true
        stack.push(item)
      }
    }
  }
  return false
}

export function nulError(): AppError {
  return appError('INVALID_CHARACTER')
}
