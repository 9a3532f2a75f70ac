// The typed client for companion apps: clients/openapi.json and clients/api-types.ts are what the
// running service serves today, and the openapi-fetch example of docs/http-api.md works against it (its
// types are checked by `npm run typecheck`, which includes this file).
import { readFile } from 'node:fs/promises'
import createClient from 'openapi-fetch'
import t from 'tap'
import type { components, paths } from '../../clients/api-types.js'
import { DOCUMENT_FILE, TYPES_FILE, liveDocument, renderClientFiles } from '../../scripts/openapi-types.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

let svc: TestApp

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
})

/** The first line where two texts differ, to point at the change without printing megabytes. */
function firstDifference(a: string, b: string): string {
  const x = a.split('\n')
  const y = b.split('\n')
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) return `line ${i + 1}: checked in ${JSON.stringify(x[i] ?? '<end>')}, served ${JSON.stringify(y[i] ?? '<end>')}`
  }
  return 'identical'
}

t.test('the checked-in document and types match what the service serves', async (t) => {
  // `npm run openapi:types` documents the embedded defaults. This test's app is on them too unless
  // the run has DATABASE_URL/REDIS_URL (with Redis, Better Auth keeps verifications out of the
  // database and leaves its Verification record out of its document): then the script's own
  // in-process app is asked instead.
  const embedded = !svc.config.databaseUrl && !svc.config.redisUrl
  const document = embedded ? await (await appFetch(`${svc.url}/api/openapi.json`)).json() : await liveDocument()
  const fresh = await renderClientFiles(document)
  for (const [file, generated] of [
    [DOCUMENT_FILE, fresh.json],
    [TYPES_FILE, fresh.types],
  ] as const) {
    const checkedIn = await readFile(file, 'utf8').catch(() => '')
    const same = checkedIn === generated
    t.ok(
      same,
      same ? `${file} is up to date` : `${file} is out of date: run npm run openapi:types (${firstDifference(checkedIn, generated)})`,
    )
  }
  t.match(fresh.types, /export interface paths \{/)
  t.match(fresh.types, /"\/api\/device\/init": \{/)
})

t.test('docs/http-api.md shows the same typed-client code this file runs', async (t) => {
  const readme = await readFile(new URL('../../docs/http-api.md', import.meta.url), 'utf8')
  const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('createClient<paths>'))
  t.ok(block, 'docs/http-api.md has the example')
  const source = await readFile(new URL(import.meta.url), 'utf8')
  const snippet = source.slice(source.indexOf('// --- as in the ' + 'README ---'), source.indexOf('// --- ' + 'end ---'))
  const lines = (text: string) =>
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('//'))
  const readmeLines = new Set(lines(block ?? ''))
  const ours = lines(snippet.replaceAll('svc.url', "'http://localhost:3000'").replace("uniqueEmail('typed')", "'ada@example.com'"))
  t.ok(ours.length >= 8)
  for (const line of ours) t.ok(readmeLines.has(line), `docs/http-api.md has: ${line}`)
})

t.test("the README's typed client: sign up, read the session, pair a device", async (t) => {
  // --- as in the README ---
  const api = createClient<paths>({ baseUrl: svc.url })
  const signUp = await api.POST('/sign-up/email', {
    body: { name: 'Ada', email: uniqueEmail('typed'), password: 'a-long-password' },
    // Node's fetch sends Sec-Fetch-Mode, so Better Auth also wants the Origin a browser would send.
    headers: { origin: svc.url },
  })
  const token = signUp.data?.token
  if (!token) throw new Error(`sign-up failed: ${JSON.stringify(signUp.error)}`)
  const auth = { headers: { authorization: `Bearer ${token}` } }

  const session = await api.GET('/get-session', auth)
  const user: components['schemas']['User'] | undefined = session.data?.user
  // --- end ---
  t.equal(session.response.status, 200)
  t.equal(user?.name, 'Ada')
  t.match(user?.balance, /^\d+(\.\d+)?$/, 'balance is numeric text')

  const init = await api.POST('/api/device/init', { body: { display: { width: 800, height: 480, palette: 'bw' }, model: 'typed-frame' } })
  t.equal(init.response.status, 200)
  const pinCode = init.data!.pinCode
  t.match(pinCode, /^[A-Z]{4}-[A-Z]{4}$/)
  const claimed = await api.POST('/api/device/validate', { body: { pinCode, name: 'Typed frame' }, ...auth })
  t.equal(claimed.data?.device.id, init.data!.deviceId)
  const record = await api.POST('/api/device/get-init-device', {
    body: { deviceId: init.data!.deviceId, deviceCode: init.data!.deviceCode },
  })
  const status: components['schemas']['DeviceInitRecord']['status'] | undefined = record.data?.status
  t.equal(status, 'active')

  // Errors come back typed as the Error record.
  const denied = await api.GET('/api/device/{id}', { params: { path: { id: 'no-such-device' } }, ...auth })
  t.equal(denied.response.status, 404)
  const error: components['schemas']['Error'] | undefined = denied.error
  t.match(error, { message: String, code: /NOT_FOUND$/ })
})
