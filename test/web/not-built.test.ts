// A service started without the console built (src/server.ts run directly, not through npm start)
// says how to build it instead of failing obscurely; the API is unaffected.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import { installErrorHandling } from '../../src/errors.js'
import { consoleRoutes } from '../../src/web/routes.js'

t.test('without web/dist: / answers 503 CONSOLE_NOT_BUILT with what to run; other paths are untouched', async (t) => {
  const empty = await mkdtemp(join(tmpdir(), 'dps-no-console-'))
  t.teardown(() => rm(empty, { recursive: true, force: true }))
  const app = Fastify()
  const errors = installErrorHandling(app)
  app.get('/api/ping', async () => ({ ok: true }))
  errors.setNotFoundFallback(await consoleRoutes(app, { distDir: empty, baseUrl: 'http://localhost:3000' }))
  t.teardown(() => app.close())
  const root = await app.inject({ url: '/', headers: { accept: 'text/html' } })
  t.equal(root.statusCode, 503)
  t.match(root.json(), { code: 'CONSOLE_NOT_BUILT', message: /npm run build:web/ })
  const deep = await app.inject({ url: '/devices/x', headers: { accept: 'text/html' } })
  t.equal(deep.statusCode, 503, 'a deep link says the same')
  t.same((await app.inject({ url: '/api/ping' })).json(), { ok: true }, 'the API answers')
  t.equal((await app.inject({ url: '/api/nothing', headers: { accept: 'text/html' } })).statusCode, 404)
})
