// Route validators and serializers are compiled once per process and shared by every app built
// in it; each app still validates and serializes exactly as Fastify's own compilers would.
import t from 'tap'
import Fastify from 'fastify'
import { compiledSchemaCounts, installSchemaCompilers } from '../../src/http/schema-compilers.js'

const thing = { $id: 'Thing', type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const

async function build() {
  const app = Fastify()
  app.addSchema(thing)
  installSchemaCompilers(app, [thing])
  app.post('/things', { schema: { body: { $ref: 'Thing#' }, response: { 200: { $ref: 'Thing#' } } } }, async (req) => ({
    ...(req.body as object),
    secret: 'not in the schema',
  }))
  // A response schema that is itself the shared one, and a query string coerced from text.
  app.get(
    '/things/:n',
    { schema: { params: { type: 'object', properties: { n: { type: 'integer' } } }, response: { 200: thing } } },
    async (req) => ({ name: `#${(req.params as { n: number }).n + 1}`, secret: 'dropped' }),
  )
  await app.ready()
  t.teardown(() => app.close())
  return app
}

t.test('bodies strict, params coerced, responses serialized by their schema', async (t) => {
  const app = await build()
  const wrongType = await app.inject({ method: 'POST', url: '/things', payload: { name: 5 } })
  t.equal(wrongType.statusCode, 400, 'a number is not a string in a body')
  const ok = await app.inject({ method: 'POST', url: '/things', payload: { name: 'lamp' } })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { name: 'lamp' }, 'fields outside the response schema are not sent')
  const byNumber = await app.inject({ method: 'GET', url: '/things/41' })
  t.same(byNumber.json(), { name: '#42' }, 'a path param is coerced to its integer, the shared schema serializes')
  const notNumber = await app.inject({ method: 'GET', url: '/things/x' })
  t.equal(notNumber.statusCode, 400)
})

t.test('a second app in the process compiles nothing new', async (t) => {
  await build()
  const first = compiledSchemaCounts()
  t.ok(first.validators >= 2 && first.serializers >= 2, 'the first app compiled its routes')
  const second = await build()
  t.same(compiledSchemaCounts(), first, 'the second reused every validator and serializer')
  const res = await second.inject({ method: 'POST', url: '/things', payload: { name: 'lamp', secret: 1 } })
  t.same(res.json(), { name: 'lamp' }, 'and behaves the same')
})
