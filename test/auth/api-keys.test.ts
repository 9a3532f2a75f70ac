// API keys (@better-auth/api-key) through the official client: created by their user, stored only
// as a digest, accepted by our routes in x-api-key for that user's devices only, refused once
// disabled, deleted, or when the account is banned, and limited per key.
import t from 'tap'
import { eq } from 'drizzle-orm'
import { startApp } from '../helpers/app.js'
import { signUpAdmin } from '../helpers/admin.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { apikey } from '../../src/db/schema.js'
import { appFetch } from '../helpers/app-fetch.js'

const BOSS = 'keys-boss@example.com'
const svc = await startApp(t, { env: { ADMIN_EMAILS: BOSS, DEVICE_POLL_INTERVAL: '0' } })

const withKey = (key: string, path: string, init: RequestInit = {}) =>
  appFetch(`${svc.url}${path}`, { ...init, headers: { 'x-api-key': key, 'content-type': 'application/json', ...(init.headers ?? {}) } })

t.test('a key made by its user acts as that user on the device API', async (t) => {
  const { client } = makeClient(svc.url)
  const owner = await signUp(client, uniqueEmail('key-owner'))
  const dev = await pairDevice(svc, owner.token, { name: 'Scripted frame' })
  const created = await client.apiKey.create({ name: 'kitchen script' })
  t.notOk(created.error, 'created')
  const key = created.data!.key
  t.match(key, /^dps_[A-Za-z0-9]{32,}$/, 'a dps_ key')

  const [row] = await svc.app.database.db.select().from(apikey).where(eq(apikey.id, created.data!.id))
  t.not(row?.key, key, 'not stored as issued')
  t.notOk(row?.key.includes(key.slice(4, 20)), 'nor any part of it beyond the shown start')
  t.equal(row?.referenceId, owner.userId)

  const list = await withKey(key, '/api/device')
  t.equal(list.status, 200)
  t.same(
    ((await list.json()) as { devices: Array<{ id: string }> }).devices.map((d) => d.id),
    [dev.deviceId],
  )
  const prompt = await withKey(key, '/api/prompts', {
    method: 'POST',
    body: JSON.stringify({ text: 'from a script', deviceId: dev.deviceId }),
  })
  t.equal(prompt.status, 201, 'it sends prompts')

  const listed = await client.apiKey.list()
  const keys = listed.data as unknown as
    | { apiKeys?: Array<{ id: string; start: string | null }> }
    | Array<{ id: string; start: string | null }>
  const arr = Array.isArray(keys) ? keys : (keys?.apiKeys ?? [])
  t.same(
    arr.map((k) => k.id),
    [created.data!.id],
    'the user sees their key',
  )
  t.match(arr[0]?.start, /^dps_/, 'by its start only')

  // Someone else's key sees nothing of this user's.
  const { client: otherClient } = makeClient(svc.url)
  await signUp(otherClient, uniqueEmail('key-other'))
  const otherKey = (await otherClient.apiKey.create({ name: 'other' })).data!.key
  t.equal((await withKey(otherKey, `/api/device/${dev.deviceId}`)).status, 404)

  t.equal((await withKey('dps_not-a-real-key-at-all-0000000000000000', '/api/device')).status, 401, 'an unknown key')
  t.equal((await appFetch(`${svc.url}/api/device`)).status, 401, 'no credential at all')

  // Disabled, then deleted: refused.
  t.notOk((await client.apiKey.update({ keyId: created.data!.id, enabled: false })).error)
  t.equal((await withKey(key, '/api/device')).status, 401, 'a disabled key')
  t.notOk((await client.apiKey.delete({ keyId: created.data!.id })).error)
  t.equal((await withKey(key, '/api/device')).status, 401, 'a deleted key')
})

t.test('a banned account is refused with its keys; a key is limited on its own', async (t) => {
  const admin = await signUpAdmin(svc, BOSS)
  const { client } = makeClient(svc.url)
  const user = await signUp(client, uniqueEmail('key-banned'))
  const key = (await client.apiKey.create({ name: 'soon useless' })).data!.key
  t.equal((await withKey(key, '/api/device')).status, 200)
  const ban = await appFetch(`${svc.url}/api/auth/admin/ban-user`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ userId: user.userId }),
  })
  t.equal(ban.status, 200)
  t.equal((await withKey(key, '/api/device')).status, 401, 'banned: the key no longer works')

  // Limits are set by the server (an integration that must stay slow, say).
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('key-limited'))
  const limited = await svc.app.auth.api.createApiKey({
    body: { userId: other.userId, name: 'slow', rateLimitEnabled: true, rateLimitMax: 2, rateLimitTimeWindow: 60_000 },
  })
  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await withKey(limited.key, '/api/device')).status)
  t.same(statuses, [200, 200, 429], 'the third request in the window is refused')
  const refused = await withKey(limited.key, '/api/device')
  t.equal(((await refused.json()) as { code: string }).code, 'RATE_LIMITED')
})
