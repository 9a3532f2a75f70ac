// Routes of a mode that is not configured do not exist: the external brokers' auth hooks answer
// 404 like any unknown path when MQTT_AUTH_SECRET is not set (a 503 reads as an outage to
// monitoring), and the OpenAPI document of such a service does not list them.
import t from 'tap'
import { startApp } from '../helpers/app.js'
import { appFetch } from '../helpers/app-fetch.js'

const hooks = ['/api/device/mqtt-auth', ...['user', 'vhost', 'resource', 'topic'].map((w) => `/api/device/rabbitmq/${w}`)]

t.test('without MQTT_AUTH_SECRET the broker hooks are 404, not 503, and not documented', async (t) => {
  const svc = await startApp(t)
  for (const path of hooks) {
    const res = await appFetch(`${svc.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer anything' },
      body: JSON.stringify({ clientid: 'x', username: 'x' }),
    })
    t.same([res.status, ((await res.json()) as { code: string }).code], [404, 'NOT_FOUND'], path)
  }
  const doc = (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as { paths: Record<string, unknown> }
  t.same(
    hooks.filter((p) => p in doc.paths),
    [],
    'none in the OpenAPI document',
  )
})

t.test('with MQTT_AUTH_SECRET they exist and check the secret', async (t) => {
  const svc = await startApp(t, { env: { MQTT_AUTH_SECRET: 'a-hook-secret-of-some-length' } })
  const res = await appFetch(`${svc.url}/api/device/mqtt-auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' },
    body: JSON.stringify({ clientid: 'x', username: 'x' }),
  })
  t.equal(res.status, 401, 'a wrong secret: 401')
})
