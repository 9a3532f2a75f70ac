// Request validation: bodies are validated strictly (a number is not a string; unknown fields
// are refused, not silently dropped), while query strings and path params are coerced from text.
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'

/**
 * JSON bodies: an empty body with a JSON content type is no body (clients often send the header
 * on a bodyless POST such as cancel); prototype-poisoning keys are refused as Fastify does.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim()
    if (!text) return done(null, undefined)
    try {
      done(null, sjson.parse(text, { protoAction: 'error', constructorAction: 'error' }))
    } catch {
      done(Object.assign(new Error('Malformed JSON body'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), undefined)
    }
  })
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
