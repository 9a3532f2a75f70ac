// The session cache never outlives a revocation: on the same instance, and on another instance
// sharing Redis, the next request is refused.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { startApp } from '../helpers/app.js'
import { signUpAdmin } from '../helpers/admin.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { reachable, redisUrl } from '../helpers/services.js'
import { appFetch } from '../helpers/app-fetch.js'

const status = async (url: string, token: string) =>
  (await appFetch(`${url}/get-session`, { headers: { authorization: `Bearer ${token}` } })).status
const post = (url: string, path: string, token: string, body: object = {}) =>
  appFetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', origin: url },
    body: JSON.stringify(body),
  })

t.test('same instance: sign-out, revoke, ban and password change are refused at once', async (t) => {
  const adminEmail = uniqueEmail('admin')
  const svc = await startApp(t, { env: { ADMIN_EMAILS: adminEmail, SESSION_CACHE_TTL_MS: '60000' } })
  const admin = await signUpAdmin(svc, adminEmail)

  const a = await signUp(makeClient(svc.url).client, uniqueEmail())
  t.equal(await status(svc.url, a.token), 200)
  t.ok(svc.app.sessionCache.size > 0, 'the session is cached')
  t.equal(await status(svc.url, a.token), 200, 'served again (from the cache)')
  t.equal((await post(svc.url, '/sign-out', a.token)).status, 200)
  t.equal(await status(svc.url, a.token), 401, 'signed out: refused on the next request')

  const email = uniqueEmail()
  const b = await signUp(makeClient(svc.url).client, email)
  const other = (await (
    await appFetch(`${svc.url}/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: svc.url },
      body: JSON.stringify({ email, password: 'correct-horse-battery' }),
    })
  ).json()) as { token: string }
  t.equal(await status(svc.url, b.token), 200)
  t.equal(await status(svc.url, other.token), 200)
  t.equal((await post(svc.url, '/revoke-session', b.token, { token: other.token })).status, 200)
  t.equal(await status(svc.url, other.token), 401, 'revoked: refused at once')

  t.equal(
    (
      await post(svc.url, '/change-password', b.token, {
        currentPassword: 'correct-horse-battery',
        newPassword: 'another-long-password',
        revokeOtherSessions: true,
      })
    ).status,
    200,
  )
  t.equal(await status(svc.url, b.token), 401, 'password changed with revokeOtherSessions: the old token is refused')

  const c = await signUp(makeClient(svc.url).client, uniqueEmail())
  t.equal(await status(svc.url, c.token), 200)
  t.equal((await post(svc.url, '/api/auth/admin/ban-user', admin.token, { userId: c.userId })).status, 200)
  t.equal(await status(svc.url, c.token), 401, 'banned: refused at once')
})

t.test('sign-ins, sign-ups and code requests leave cached sessions in place', async (t) => {
  const svc = await startApp(t, { env: { SESSION_CACHE_TTL_MS: '60000' } })
  const email = uniqueEmail('cached')
  const a = await signUp(makeClient(svc.url).client, email)
  t.equal(await status(svc.url, a.token), 200)
  const cached = svc.app.sessionCache.size
  t.ok(cached > 0, 'the session is cached')
  const anon = (path: string, body: object) =>
    appFetch(`${svc.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: svc.url },
      body: JSON.stringify(body),
    })
  t.equal((await anon('/sign-in/email', { email, password: 'correct-horse-battery' })).status, 200)
  t.equal((await anon('/sign-up/email', { email: uniqueEmail('other'), password: 'correct-horse-battery', name: 'Other' })).status, 200)
  t.equal((await anon('/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })).status, 200)
  t.equal((await anon('/request-password-reset', { email })).status, 200)
  t.equal(svc.app.sessionCache.size, cached, 'none of them cleared the cache')
  t.equal((await post(svc.url, '/update-user', a.token, { name: 'Renamed' })).status, 200)
  t.equal(svc.app.sessionCache.size, 0, 'an account change clears it')
  const renamed = (await (await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${a.token}` } })).json()) as {
    user: { name: string }
  }
  t.equal(renamed.user.name, 'Renamed', 'and the next read shows the change')
})

const pgReachable = await reachable(5432)
const redis = await redisUrl()

t.test(
  'another instance refuses a revoked session on its next request',
  { skip: pgReachable && redis ? false : 'needs PostgreSQL and Redis on the machine' },
  async (t) => {
    const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
    const name = `t_${randomBytes(6).toString('hex')}`
    const admin = postgres(base, { max: 1, onnotice: () => {} })
    await admin.unsafe(`CREATE DATABASE ${name}`)
    await admin.end()
    t.teardown(async () => {
      const drop = postgres(base, { max: 1, onnotice: () => {} })
      await drop.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
      await drop.end()
    })
    const u = new URL(base)
    u.pathname = `/${name}`
    // Instances of one service share AUTH_SECRET (sessions are signed with it).
    const env = {
      AUTH_SECRET: randomBytes(32).toString('base64url'),
      DATABASE_URL: u.toString(),
      REDIS_URL: redis as string,
      REDIS_PREFIX: `test:${randomBytes(6).toString('hex')}:`,
      SESSION_CACHE_TTL_MS: '60000',
    }
    const a = await startApp(t, { env: { ...env, MQTT_BROKER_ID: 'node-a' } })
    // Nodes of one cluster share the object store: B uses A's data folder.
    const b = await startApp(t, {
      env: { ...env, MQTT_BROKER_ID: 'node-b' },
      reuse: { dataDir: a.dataDir, databaseUrl: env.DATABASE_URL, redisPrefix: env.REDIS_PREFIX },
    })
    const user = await signUp(makeClient(a.url).client, uniqueEmail())
    t.equal(await status(b.url, user.token), 200, 'B resolves and caches the session')
    t.equal(await status(b.url, user.token), 200)
    t.equal((await post(a.url, '/sign-out', user.token)).status, 200, 'signed out through A')
    // The shared generation moved before A answered: B's cached entry is stale on its next hit,
    // whether or not B has received the pub/sub message yet.
    t.equal(await status(b.url, user.token), 401, 'B refuses it on the very next request')
  },
)
