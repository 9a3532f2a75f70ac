// Cross-origin rules as a browser exercises them: a cookie-carrying write from a foreign site is
// refused on our routes as on Better Auth's, a companion app on a trusted origin can preflight
// every operation the API has, and revoke-session takes either form of a session token.
import t from 'tap'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'

const TRUSTED = 'https://app.example'
const FOREIGN = 'https://evil.example'

t.test('origins, preflights and token forms', async (t) => {
  const svc = await startApp(t, { env: { TRUSTED_ORIGINS: TRUSTED } })
  const { client, jar } = makeClient(svc.url)
  const email = uniqueEmail('origin')
  const { token } = await signUp(client, email)
  const cookie = jar.header()
  t.ok(cookie.includes('session_token'), 'signed up with a session cookie')

  t.test('a cookie-carrying write from a foreign site is refused on our routes', async (t) => {
    const cancel = (headers: Record<string, string>) =>
      fetch(`${svc.url}/api/generate/00000000-0000-4000-8000-000000000000/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...headers },
        body: '',
      })
    const cross = await cancel({ cookie, origin: FOREIGN })
    t.equal(cross.status, 403)
    t.equal((await cross.json()).code, 'FORBIDDEN_ORIGIN')
    // The same request from our own pages, from the trusted app, or with a bearer token goes on to the handler.
    for (const [label, headers] of [
      ['own origin', { cookie, origin: svc.url }],
      ['trusted origin', { cookie, origin: TRUSTED }],
      ['no Origin (not a browser)', { cookie }],
      ['bearer from anywhere', { authorization: `Bearer ${token}`, origin: FOREIGN }],
    ] as const) {
      const res = await cancel(headers)
      t.not(res.status, 403, `${label}: not refused for its origin`)
      t.not((await res.json()).code, 'FORBIDDEN_ORIGIN', label)
    }

    const form = new FormData()
    form.append('file', new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], { type: 'image/png' }), 'a.png')
    const upload = await fetch(`${svc.url}/api/upload`, { method: 'POST', headers: { cookie, origin: FOREIGN }, body: form })
    t.equal(upload.status, 403, 'a multipart upload from a foreign site with the cookie')
    t.equal((await upload.json()).code, 'FORBIDDEN_ORIGIN')

    const read = await fetch(`${svc.url}/api/device`, { headers: { cookie, origin: FOREIGN } })
    t.equal(read.status, 200, 'reads are not writes: CORS keeps their answers from the foreign page')
  })

  t.test('a trusted origin may preflight every operation of the document', async (t) => {
    const doc = (await (await fetch(`${svc.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> }
    let checked = 0
    for (const [path, ops] of Object.entries(doc.paths)) {
      const concrete = path.replace(/\{[^}]+\}/g, 'x')
      for (const method of Object.keys(ops)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
        const res = await fetch(`${svc.url}${concrete}`, {
          method: 'OPTIONS',
          headers: {
            origin: TRUSTED,
            'access-control-request-method': method.toUpperCase(),
            'access-control-request-headers': 'content-type, authorization',
          },
        })
        const allowed = (res.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim())
        if (res.status >= 300 || res.headers.get('access-control-allow-origin') !== TRUSTED || !allowed.includes(method.toUpperCase())) {
          t.fail(
            `${method.toUpperCase()} ${path}: preflight ${res.status}, allows ${allowed.join(',')} for ${res.headers.get('access-control-allow-origin')}`,
          )
        }
        checked++
      }
    }
    t.ok(checked > 100, `${checked} operations preflighted`)
    const foreign = await fetch(`${svc.url}/api/device/delete`, {
      method: 'OPTIONS',
      headers: { origin: FOREIGN, 'access-control-request-method': 'DELETE' },
    })
    t.equal(foreign.headers.get('access-control-allow-origin'), null, 'a foreign origin is not allowed')
  })

  t.test('revoke-session takes the signed token (set-auth-token) and refuses a forged one', async (t) => {
    const signIn = async () => {
      const res = await fetch(`${svc.url}/api/auth/sign-in/email`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: svc.url },
        body: JSON.stringify({ email, password: 'correct-horse-battery' }),
      })
      t.equal(res.status, 200, 'signed in again')
      return { bare: (await res.json()).token as string, signed: res.headers.get('set-auth-token')! }
    }
    const session = async (credential: string) =>
      (await (await fetch(`${svc.url}/api/auth/get-session`, { headers: { authorization: `Bearer ${credential}` } })).json()) as unknown
    const revoke = (tokenValue: string, path = '/api/auth/revoke-session') =>
      fetch(`${svc.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ token: tokenValue }),
      })

    for (const path of ['/api/auth/revoke-session', '/revoke-session']) {
      const second = await signIn()
      t.not(second.signed, second.bare, 'the header carries the signed form')
      t.ok(await session(second.signed), 'the new session works')
      const forged = await revoke(`${second.bare}.${Buffer.alloc(32, 7).toString('base64')}`, path)
      t.equal(forged.status, 400, `${path}: a forged signature is refused`)
      t.equal((await forged.json()).code, 'INVALID_TOKEN')
      t.ok(await session(second.signed), 'and revoked nothing')
      const res = await revoke(second.signed, path)
      t.equal(res.status, 200, `${path}: the signed form`)
      t.same(await res.json(), { status: true })
      t.equal(await session(second.signed), null, 'revoked the session it names')
      t.equal(await session(second.bare), null)
    }
    t.ok(await session(token), 'the caller’s own session is untouched')
  })
})
