// TypeBox pieces for request schemas. Each builds the same plain JSON Schema a route would write
// by hand (our ajv validates it, @fastify/swagger publishes it), plus the TypeScript type to
// match, so a handler's input type cannot drift from what is validated.
import { Type, type Static, type TSchema, type TSchemaOptions } from 'typebox'

/**
 * A field with a default: left out of `required` as before, yet typed as always present, because
 * the validators run with useDefaults and fill it in before a handler sees the request.
 */
export const Defaulted = <T extends TSchema>(schema: T): T => Type.Optional(schema) as unknown as T

/**
 * `{ type: 'string', enum }` typed as the union of its values. Type.Enum would leave out
 * `type: 'string'` and a union of literals would be an anyOf: both change the document.
 */
export const StringEnum = <const V extends readonly string[]>(values: V, options: TSchemaOptions = {}) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options })

/** `{ type: ['string', 'null'] }`, the document's form of a nullable string (a union would be an anyOf). */
export const NullableString = (options: TSchemaOptions = {}) => Type.Unsafe<string | null>({ type: ['string', 'null'], ...options })

/**
 * `{ $ref: 'Id#' }` to a shared schema (one given to app.addSchema), typed as that schema's value.
 * `options` sit beside the reference: a request body's `examples`, which belong to the route.
 */
export function SharedRef<T extends TSchema>(schema: T, options: { examples?: Array<Static<T>> } = {}) {
  const id = (schema as { $id?: unknown }).$id
  if (typeof id !== 'string') throw new Error('SharedRef needs a schema with an $id')
  return Type.Unsafe<Static<T>>({ $ref: `${id}#`, ...options })
}

/** A schema given an `$id` (to share with app.addSchema) that its type carries too, as installSchemaCompilers needs. */
export const Shared = <const Id extends string, T extends TSchema>($id: Id, schema: T): T & { $id: Id } => Object.assign(schema, { $id })
