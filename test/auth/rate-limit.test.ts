// Rate limits: Better Auth's strict per-endpoint limits on sign-in, and the app-wide limiter on
// every other route, both keyed on the client's socket address unless a proxy is trusted.
//
// Better Auth's in-memory store is one module-global Map shared by every app in this process,
// keyed "<address>|<path>"; in Redis mode each app has its own key prefix. So the buckets each
// test relies on are used by that app only: app A alone signs in from 127.0.0.1, app B sees only
// 198.51.100.x (it trusts the proxy header), and app C expects 429s from its own app-wide
// limiter, which Fastify applies before a request reaches Better Auth.
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const PASSWORD = 'correct-horse-battery'

async function post(svc: TestApp, path: string, body: unknown, headers: Record<string, string> = {}) {
  return appFetch(svc.url + path, {
    method: 'POST',
    // Origin: what a browser page of the service would send (Node's fetch sends Sec-Fetch-Mode).
    headers: { 'content-type': 'application/json', origin: svc.url, ...headers },
    body: JSON.stringify(body),
  })
}

/** A 429 as the interface promises it: Retry-After in whole seconds and { message, code }. */
async function expect429(t: Test, res: Response, maxWindow: number) {
  t.equal(res.status, 429, 'status 429')
  const retry = res.headers.get('retry-after')
  t.match(retry, /^\d+$/, 'Retry-After is an integer number of seconds')
  t.ok(Number(retry) >= 1 && Number(retry) <= maxWindow, `Retry-After ${retry} is within the ${maxWindow} s window`)
  t.match(res.headers.get('content-type') ?? '', /^application\/json/)
  const body = (await res.json()) as { message: unknown; code: unknown }
  t.type(body.message, 'string')
  t.ok((body.message as string).length > 0)
  t.equal(body.code, 'TOO_MANY_REQUESTS')
  return body
}

t.test('strict sign-in limit (5 per 60 s) keyed on the socket address', async (t) => {
  const svc = await startApp(t, {
    env: { RATE_LIMIT_AUTH_MAX: '5', RATE_LIMIT_AUTH_WINDOW: '60', RATE_LIMIT_MAX: '200', RATE_LIMIT_WINDOW: '60' },
  })
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('limited')
  const { token } = await signUp(client, email, PASSWORD)

  await t.test('the sixth attempt is refused; root and /api/auth share one bucket', async (t) => {
    // Five attempts are allowed, split over both paths of the same operation.
    for (const path of ['/sign-in/email', '/sign-in/email', '/sign-in/email', '/api/auth/sign-in/email', '/api/auth/sign-in/email']) {
      const res = await post(svc, path, { email, password: 'wrong-password-123' })
      t.equal(res.status, 401, `${path}: a wrong password is still judged`)
      await res.body?.cancel()
    }
    // Better Auth keys its limit on the path after our forwarding (/sign-in/email for both),
    // so the sixth attempt is refused on either path.
    const root = await post(svc, '/sign-in/email', { email, password: 'wrong-password-123' })
    const body = await expect429(t, root, 60)
    t.match(body.message, /too many requests/i)
    const api = await post(svc, '/api/auth/sign-in/email', { email, password: PASSWORD })
    await expect429(t, api, 60)
    t.notOk(
      api.headers.getSetCookie().some((c) => /session_token=[^;]+/.test(c)),
      'even the right password gets no session',
    )
    // The official client sees the same refusal.
    const viaClient = await client.signIn.email({ email, password: PASSWORD })
    t.equal(viaClient.error?.status, 429)
    t.equal(viaClient.error?.code, 'TOO_MANY_REQUESTS')
  })

  await t.test('other endpoints are not blocked by the sign-in limit', async (t) => {
    for (const path of ['/ok', '/api/auth/ok']) {
      const res = await appFetch(svc.url + path)
      t.equal(res.status, 200, `GET ${path}`)
      t.same(await res.json(), { ok: true })
    }
    const session = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(session.status, 200, 'an existing session keeps working')
    t.equal(((await session.json()) as { user: { email: string } }).user.email, email)
    // Sign-up has its own bucket (one use so far).
    const other = await post(svc, '/sign-up/email', { email: uniqueEmail('other'), password: PASSWORD, name: 'Other' })
    t.equal(other.status, 200, 'sign-up is a separate bucket')
    await other.body?.cancel()
  })

  await t.test('a client-chosen x-forwarded-for or x-dps-client-ip does not give a fresh bucket', async (t) => {
    const spoofs: Array<Record<string, string>> = [
      { 'x-forwarded-for': '203.0.113.7' },
      { 'x-real-ip': '203.0.113.8' },
      { 'x-dps-client-ip': '203.0.113.9' },
      { 'x-forwarded-for': '203.0.113.10', 'x-dps-client-ip': '203.0.113.10' },
    ]
    for (const headers of spoofs) {
      for (const path of ['/sign-in/email', '/api/auth/sign-in/email']) {
        const res = await post(svc, path, { email, password: PASSWORD }, headers)
        t.equal(res.status, 429, `${path} with ${JSON.stringify(headers)} is still limited`)
        await res.body?.cancel()
      }
    }
  })
})

t.test('with TRUST_PROXY=true each forwarded address has its own bucket', async (t) => {
  const svc = await startApp(t, {
    env: { TRUST_PROXY: 'true', RATE_LIMIT_AUTH_MAX: '2', RATE_LIMIT_AUTH_WINDOW: '60', RATE_LIMIT_MAX: '4', RATE_LIMIT_WINDOW: '60' },
  })
  const from = (ip: string) => ({ 'x-forwarded-for': ip })
  const email = uniqueEmail('proxied')

  await t.test('Better Auth sign-in limit per forwarded address', async (t) => {
    for (let i = 0; i < 2; i++) {
      const res = await post(svc, '/sign-in/email', { email, password: 'wrong-password-123' }, from('198.51.100.1'))
      t.equal(res.status, 401, `attempt ${i + 1} from 198.51.100.1`)
      await res.body?.cancel()
    }
    await expect429(t, await post(svc, '/api/auth/sign-in/email', { email, password: 'wrong-password-123' }, from('198.51.100.1')), 60)
    const fresh = await post(svc, '/sign-in/email', { email, password: 'wrong-password-123' }, from('198.51.100.2'))
    t.equal(fresh.status, 401, 'another client behind the proxy is not blocked')
    await fresh.body?.cancel()
    // The address is the client's (left-most) entry; the proxy chain after it does not matter.
    const chained = await post(svc, '/sign-in/email', { email, password: 'wrong-password-123' }, from('198.51.100.1, 10.0.0.1'))
    // (Its fourth request, so still within the app-wide limit of 4: this is the sign-in limit.)
    const refused = await expect429(t, chained, 60)
    t.match(refused.message, /try again later/i, 'the same client through another hop is still limited')
  })

  await t.test('the app-wide limit per forwarded address', async (t) => {
    for (let i = 0; i < 4; i++) {
      const res = await appFetch(`${svc.url}/get-session`, { headers: from('198.51.100.3') })
      t.equal(res.status, 401, `request ${i + 1} from 198.51.100.3`)
      await res.body?.cancel()
    }
    await expect429(t, await appFetch(`${svc.url}/get-session`, { headers: from('198.51.100.3') }), 60)
    const other = await appFetch(`${svc.url}/get-session`, { headers: from('198.51.100.4') })
    t.equal(other.status, 401, 'another forwarded address has its own bucket')
    await other.body?.cancel()
  })
})

t.test('the app-wide limit on routes outside Better Auth', async (t) => {
  const svc = await startApp(t, { env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW: '60' } })
  for (let i = 0; i < 3; i++) {
    const res = await appFetch(`${svc.url}/get-session`)
    t.equal(res.status, 401, `request ${i + 1} is answered normally`)
    await res.body?.cancel()
  }
  const limited = await appFetch(`${svc.url}/get-session`)
  const body = await expect429(t, limited, 60)
  t.match(body.message, /retry in \d+ seconds/i)
  t.same(Object.keys(body).sort(), ['code', 'message'], 'nothing but message and code')

  // The same address is limited everywhere, including the forwarded Better Auth routes...
  for (const path of ['/error', '/ok', '/api/auth/ok']) {
    const res = await appFetch(svc.url + path)
    await expect429(t, res, 60)
  }
  // ...and a client-sent forwarding header does not escape it (no proxy is trusted).
  for (const headers of [
    { 'x-forwarded-for': '203.0.113.20' },
    { 'x-dps-client-ip': '203.0.113.21' },
    { 'x-real-ip': '203.0.113.22' },
  ] as Array<Record<string, string>>) {
    const res = await appFetch(`${svc.url}/get-session`, { headers })
    t.equal(res.status, 429, `${JSON.stringify(headers)} is still limited`)
    await res.body?.cancel()
  }
})
