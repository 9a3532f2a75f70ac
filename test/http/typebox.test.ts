// The TypeBox helpers route schemas are built with must emit the JSON Schema the routes wrote by
// hand before (the validators and the OpenAPI document see only that), and Defaulted's field must
// still get its default from the validators, which is why its type may say it is always there.
import t from 'tap'
import { Ajv } from 'ajv'
import { Type } from 'typebox'
import { Defaulted, NullableString, Shared, SharedRef, StringEnum } from '../../src/http/typebox.js'

const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as unknown

t.test('each helper emits the plain schema it stands for', async (t) => {
  t.same(plain(StringEnum(['a', 'b'], { default: 'a' })), { type: 'string', enum: ['a', 'b'], default: 'a' })
  t.same(plain(NullableString({ format: 'date-time' })), { type: ['string', 'null'], format: 'date-time' })
  const shared = Shared('Thing', Type.Object({ x: Type.String() }))
  t.equal(shared.$id, 'Thing')
  t.same(plain(SharedRef(shared)), { $ref: 'Thing#' })
  t.throws(() => SharedRef(Type.String()), /\$id/)
})

t.test('a Defaulted field is left out of required and filled in by the validator', async (t) => {
  const query = Type.Object(
    { limit: Defaulted(Type.Integer({ minimum: 1, default: 20 })), cursor: Type.Optional(Type.String()) },
    { additionalProperties: false },
  )
  t.same(plain(query), {
    type: 'object',
    properties: { limit: { type: 'integer', minimum: 1, default: 20 }, cursor: { type: 'string' } },
    additionalProperties: false,
  })
  // As src/http/validation.ts configures it.
  const validate = new Ajv({ coerceTypes: 'array', useDefaults: true, strict: false }).compile(query)
  const value: Record<string, unknown> = {}
  t.ok(validate(value))
  t.same(value, { limit: 20 })
})
