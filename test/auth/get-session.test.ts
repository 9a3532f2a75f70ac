import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

const sessionFields = [
  'id',
  'expires_at',
  'token',
  'created_at',
  'updated_at',
  'ip_address',
  'user_agent',
  'user_id',
  'impersonated_by',
  'active_organization_id',
]
const userFields = [
  'id',
  'name',
  'email',
  'email_verified',
  'image',
  'created_at',
  'updated_at',
  'phone_number',
  'phone_number_verified',
  'role',
  'banned',
  'ban_reason',
  'ban_expires',
  'balance',
]

// One app for the file: each test signs up people of its own and reads only their sessions, so
// none depends on a fresh database (an app start is about 1.2 s of CPU).
let svc: TestApp
t.before(async () => {
  svc = await startApp(t)
})

t.test('root /get-session returns the documented Session and User shape', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail()
  const { token, userId } = await signUp(client, email)

  const res = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}`, 'user-agent': 'companion-app/1.0' } })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /application\/json/)
  const body = (await res.json()) as { session: Record<string, unknown>; user: Record<string, unknown> }
  t.same(Object.keys(body.session).sort(), [...sessionFields].sort(), 'exactly the Session fields')
  t.same(Object.keys(body.user).sort(), [...userFields].sort(), 'exactly the User fields')

  const s = body.session
  t.equal(s.token, token)
  t.equal(s.user_id, userId)
  t.match(s.expires_at, iso)
  t.match(s.created_at, iso)
  t.match(s.updated_at, iso)
  t.ok(Date.parse(s.expires_at as string) > Date.now(), 'expires in the future')
  t.equal(s.ip_address, '127.0.0.1')
  t.equal(typeof s.user_agent, 'string')
  t.equal(s.impersonated_by, null)
  t.equal(s.active_organization_id, null)

  const u = body.user
  t.equal(u.id, userId)
  t.equal(u.email, email)
  t.equal(u.name, 'Test User')
  t.equal(u.email_verified, false)
  t.equal(u.image, null)
  t.equal(u.phone_number, null)
  t.equal(u.phone_number_verified, false)
  t.equal(u.role, 'user')
  t.equal(u.banned, false)
  t.equal(u.ban_reason, null)
  t.equal(u.ban_expires, null)
  t.equal(typeof u.balance, 'string')
  t.match(u.balance, /^\d+(\.\d+)?$/)
  t.equal(Number(u.balance), 0)
  t.match(u.created_at, iso)
})

t.test('root /get-session without or with a bad token is 401 {message, code}', async (t) => {
  for (const headers of [{}, { authorization: 'Bearer not-a-token' }, { authorization: 'Basic abc' }] as Array<Record<string, string>>) {
    const res = await appFetch(`${svc.url}/get-session`, { headers })
    t.equal(res.status, 401, JSON.stringify(headers))
    const body = (await res.json()) as { message: string; code: string }
    t.equal(body.code, 'UNAUTHORIZED')
    t.type(body.message, 'string')
  }
})

t.test('signed-out and revoked tokens stop working at once', async (t) => {
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const ok = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(ok.status, 200)
  const out = await appFetch(`${svc.url}/sign-out`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  })
  t.equal(out.status, 200, 'sign-out with an empty JSON body works')
  t.same(await out.json(), { success: true })
  const after = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(after.status, 401)
})

t.test('balance is never settable by the user', async (t) => {
  const signup = await appFetch(`${svc.url}/sign-up/email`, {
    method: 'POST',
    // Node's fetch sends Sec-Fetch-Mode, so Better Auth's CSRF check wants an Origin, as from a browser.
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ email: uniqueEmail(), password: 'correct-horse-battery', name: 'Greedy', balance: '1000000' }),
  })
  t.equal(signup.status, 200, 'sign-up succeeds')
  const created = (await signup.json()) as { token: string; user: { balance: string } }
  t.equal(Number(created.user.balance), 0, 'sign-up ignores a balance field')
  const own = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${created.token}` } })
  t.equal(Number(((await own.json()) as { user: { balance: string } }).user.balance), 0, 'stored balance is 0')
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const upd = await appFetch(`${svc.url}/update-user`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ balance: '999', name: 'Renamed' }),
  })
  t.equal(upd.status, 400, 'update-user refuses balance')
  t.equal(((await upd.json()) as { code: string }).code.length > 0, true)
  const res = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  const body = (await res.json()) as { user: { balance: string; name: string } }
  t.equal(Number(body.user.balance), 0)
})
