// Request validation: bodies are validated strictly (a number is not a string; unknown fields
// are refused, not silently dropped), while query strings and path params are coerced from text.
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { AppError } from '../errors.js'

/**
 * JSON bodies: an empty body with a JSON content type is no body (clients often send the header
 * on a bodyless POST such as cancel); prototype-poisoning keys are refused as Fastify does.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim()
    if (!text) return done(null, undefined)
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

/**
 * PostgreSQL text cannot hold U+0000: a string carrying one fails in the database, as a 500.
 * No field of this service has a use for it, so it is refused where requests are parsed.
 */
export function hasNulCharacter(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000')
  if (Array.isArray(value)) return value.some(hasNulCharacter)
  if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) if (key.includes('\u0000') || hasNulCharacter(v)) return true
  }
  return false
}

export function nulError(): AppError {
  return new AppError(400, 'INVALID_CHARACTER', 'Text may not contain the NUL character (U+0000)')
}

export function installValidators(app: FastifyInstance, shared: ReadonlyArray<{ $id: string }>): void {
  const strict = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false })
  const lenient = new Ajv({ coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: false, strict: false })
  for (const ajv of [strict, lenient]) {
    addFormats.default(ajv)
    for (const schema of shared) ajv.addSchema(schema)
  }
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : lenient).compile(schema))
}
