// Authentication comes before validation: every operation of the OpenAPI document that declares a
// security requirement answers an anonymous request with 401, whatever body it carries, so a
// route's schema is not learnt without a credential. And a route that declares no
// authentication cannot be registered.
import t from 'tap'
import Fastify from 'fastify'
import type { Auth } from '../../src/auth/auth.js'
import { installRouteAuth } from '../../src/auth/route-auth.js'
import type { Database } from '../../src/db/client.js'
import { startApp } from '../helpers/app.js'
import { appFetch } from '../helpers/app-fetch.js'

type Operation = { security?: Array<Record<string, string[]>>; requestBody?: unknown }

const bodies: Array<{ name: string; type: string; body: string }> = [
  { name: 'no fields', type: 'application/json', body: '{}' },
  { name: 'wrong types', type: 'application/json', body: '{"deviceId":5,"pinCode":[],"name":{"a":1},"token":false,"userId":null}' },
  { name: 'malformed JSON', type: 'application/json', body: '{"a":' },
  { name: 'text', type: 'text/plain', body: 'hello' },
]

t.test('every operation that needs a credential answers 401 to an anonymous request, whatever its body', async (t) => {
  const svc = await startApp(t, { env: { MQTT_AUTH_SECRET: 'a-hook-secret-of-some-length' } })
  const doc = (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, Operation>> }
  const wrong: string[] = []
  let checked = 0
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== 'object' || !('responses' in op)) continue
      const security = op.security ?? []
      if (!security.length || security.some((s) => Object.keys(s).length === 0)) continue
      const url = svc.url + path.replace(/\{[^}]+\}/g, 'x')
      const withBody = !['get', 'head', 'delete'].includes(method) || op.requestBody !== undefined
      for (const b of withBody ? bodies : [bodies[0]!]) {
        const res = await appFetch(url, {
          method: method.toUpperCase(),
          headers: withBody ? { 'content-type': b.type } : {},
          body: withBody ? b.body : undefined,
        })
        const text = await res.text()
        checked += 1
        let json: { message?: unknown; code?: unknown } = {}
        try {
          json = JSON.parse(text)
        } catch {}
        if (res.status !== 401 || typeof json.message !== 'string' || typeof json.code !== 'string')
          wrong.push(`${method.toUpperCase()} ${path} (${b.name}): ${res.status} ${text.slice(0, 120)}`)
      }
    }
  }
  t.ok(checked > 200, `${checked} anonymous requests sent`)
  t.same(wrong, [], 'each answered 401 with {message, code}')
})

t.test('a route that declares no authentication cannot be registered', async (t) => {
  const app = Fastify()
  installRouteAuth(app, {
    auth: {} as Auth,
    db: {} as Database,
    docsPath: '/docs',
    allowedOrigins: new Set<string>(),
    ownOrigin: 'http://localhost',
  })
  app.get('/declared', { config: { auth: 'none' } }, async () => 'ok')
  app.get('/secured', { schema: { security: [{ bearerAuth: [] }] } }, async () => 'ok')
  t.throws(() => app.get('/forgotten', async () => 'oops'), /GET \/forgotten declares no authentication/)
  await app.ready()
  t.equal((await app.inject('/declared')).statusCode, 200, 'a public route answers')
  t.equal(app.hasRoute({ method: 'GET', url: '/forgotten' }), false, 'the undeclared route does not exist')
  await app.close()
})
