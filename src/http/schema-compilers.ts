// Route schemas compile once per process. Compiling a route's request validator (Ajv) and
// response serializer (fast-json-stringify) is most of what building the app costs (about 0.4 s
// of CPU for our hundred routes); a process that builds the app again, as every test file does,
// reuses what an earlier build compiled from the same schema and shared schemas. Each compiles at
// its route's first use, not when the app is built: the code Ajv and fast-json-stringify generate
// stays in the heap for the life of the process, and most routes are never called by a given one.
import { Ajv, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance } from 'fastify'
import fastJson from 'fast-json-stringify'

type Shared = ReadonlyArray<{ $id: string }>

type Compilers = {
  strict: Ajv
  lenient: Ajv
  validators: Map<string, ValidateFunction>
  serializers: Map<string, (data: unknown) => string>
}

/** Per set of shared schemas (one in practice): its Ajv instances and what they compiled. */
const bySharedSchemas = new Map<string, Compilers>()

/**
 * Bodies are validated strictly (a number is not a string; unknown fields are refused, not
 * silently dropped), while query strings and path params are coerced from text.
 */
function compilersFor(shared: Shared): Compilers {
  const sharedKey = JSON.stringify(shared)
  let compilers = bySharedSchemas.get(sharedKey)
  if (!compilers) {
    const strict = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false })
    const lenient = new Ajv({ coerceTypes: 'array', useDefaults: true, removeAdditional: false, allErrors: false, strict: false })
    for (const ajv of [strict, lenient]) {
      addFormats.default(ajv)
      for (const schema of shared) ajv.addSchema(schema)
    }
    compilers = { strict, lenient, validators: new Map(), serializers: new Map() }
    bySharedSchemas.set(sharedKey, compilers)
  }
  return compilers
}

export function installSchemaCompilers(app: FastifyInstance, shared: Shared): void {
  const { strict, lenient, validators, serializers } = compilersFor(shared)
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const mode = httpPart === 'body' ? 'strict' : 'lenient'
    const key = `${mode}\n${JSON.stringify(schema)}`
    const compiled = validators.get(key)
    if (compiled) return compiled
    // Compiled at the route's first request: most routes of an instance are never called (an
    // instance that only holds devices' connections calls a handful), and the code Ajv generates
    // for them would stay in the heap for nothing. Fastify reads `errors` off the function it was
    // given, so the wrapper passes them on.
    const lazy = Object.assign(
      (data: unknown) => {
        let validate = validators.get(key)
        if (!validate) {
          validate = (mode === 'strict' ? strict : lenient).compile(schema)
          validators.set(key, validate)
        }
        const valid = validate(data)
        lazy.errors = validate.errors
        return valid
      },
      { errors: null as ValidateFunction['errors'] },
    )
    return lazy
  })
  const external = Object.fromEntries(shared.map((s) => [s.$id, s]))
  app.setSerializerCompiler(({ schema }) => {
    const key = JSON.stringify(schema)
    const compiled = serializers.get(key)
    if (compiled) return compiled
    // At the first response, as validators are (above).
    return (data: unknown) => {
      let serialize = serializers.get(key)
      if (!serialize) {
        // As Fastify's own compiler does: a response schema that is itself a shared one is not
        // also given as an external schema (fast-json-stringify would see its $id twice).
        const id = (schema as { $id?: string }).$id
        const others = id && id in external ? Object.fromEntries(Object.entries(external).filter(([k]) => k !== id)) : external
        serialize = fastJson(schema as Parameters<typeof fastJson>[0], { schema: others as Record<string, Parameters<typeof fastJson>[0]> })
        serializers.set(key, serialize)
      }
      return serialize(data)
    }
  })
}

/** How many validators and serializers this process has compiled (each schema once, at its first use). */
export function compiledSchemaCounts(): { validators: number; serializers: number } {
  let validators = 0
  let serializers = 0
  for (const c of bySharedSchemas.values()) {
    validators += c.validators.size
    serializers += c.serializers.size
  }
  return { validators, serializers }
}
