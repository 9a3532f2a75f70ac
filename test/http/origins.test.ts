// Cross-origin rules as a browser exercises them: a cookie-carrying write from a foreign site is
// refused on our routes as on Better Auth's, a companion app on a trusted origin can preflight
// every operation the API has, and revoke-session takes either form of a session token.
import t from 'tap'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

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
      appFetch(`${svc.url}/api/generate/00000000-0000-4000-8000-000000000000/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...headers },
        body: '',
      })
    const cross = await cancel({ cookie, origin: FOREIGN })
    t.equal(cross.status, 403)
    t.equal((await cross.json()).code, 'FORBIDDEN_ORIGIN')
    // Better Auth refuses a cookie-carrying write that says nowhere where it comes from; so do our
    // routes: neither Origin nor Referer, an Origin of "null", or a Referer of another site.
    for (const [label, headers] of [
      ['no Origin and no Referer', { cookie }],
      ['Origin "null" (a sandboxed frame)', { cookie, origin: 'null' }],
      ['a foreign Referer and no Origin', { cookie, referer: `${FOREIGN}/page` }],
      ['an unreadable Referer and no Origin', { cookie, referer: 'not a url' }],
    ] as const) {
      const res = await cancel(headers)
      t.equal(res.status, 403, `${label}: refused`)
      const body = await res.json()
      t.equal(body.code, 'FORBIDDEN_ORIGIN', label)
      t.type(body.message, 'string')
    }
    const deleted = await appFetch(`${svc.url}/api/device/delete`, {
      method: 'DELETE',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ deviceId: 'x' }),
    })
    t.equal(deleted.status, 403, 'a DELETE with the cookie and no Origin')
    t.equal((await deleted.json()).code, 'FORBIDDEN_ORIGIN')
    // Better Auth's own answer to the same, for comparison.
    const theirs = await appFetch(`${svc.url}/api/auth/update-user`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Renamed' }),
    })
    t.equal(theirs.status, 403, 'Better Auth refuses it on its own routes')

    // The same request from our own pages (by Origin, or by Referer where a browser leaves Origin
    // out, or "null" that the browser says is same-origin), from the trusted app, or with a bearer
    // token goes on to the handler.
    for (const [label, headers] of [
      ['own origin', { cookie, origin: svc.url }],
      ['trusted origin', { cookie, origin: TRUSTED }],
      ['own Referer, no Origin', { cookie, referer: `${svc.url}/devices` }],
      ['trusted Referer, no Origin', { cookie, referer: `${TRUSTED}/x?y=1` }],
      ['Origin "null", same-origin by Sec-Fetch-Site', { cookie, origin: 'null', 'sec-fetch-site': 'same-origin' }],
      ['bearer from anywhere', { authorization: `Bearer ${token}`, origin: FOREIGN }],
      ['bearer beside the cookie, no Origin', { authorization: `Bearer ${token}`, cookie }],
    ] as const) {
      const res = await cancel(headers)
      t.not(res.status, 403, `${label}: not refused for its origin`)
      t.not((await res.json()).code, 'FORBIDDEN_ORIGIN', label)
    }

    const form = new FormData()
    form.append('file', new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], { type: 'image/png' }), 'a.png')
    const upload = await appFetch(`${svc.url}/api/upload`, { method: 'POST', headers: { cookie, origin: FOREIGN }, body: form })
    t.equal(upload.status, 403, 'a multipart upload from a foreign site with the cookie')
    t.equal((await upload.json()).code, 'FORBIDDEN_ORIGIN')

    const read = await appFetch(`${svc.url}/api/device`, { headers: { cookie, origin: FOREIGN } })
    t.equal(read.status, 200, 'reads are not writes: CORS keeps their answers from the foreign page')
  })

  t.test('no page of the service can be framed by another site', async (t) => {
    const owner = makeClient(svc.url)
    await signUp(owner.client, uniqueEmail('framer'))
    const org = await owner.client.organization.create({ name: 'Framed', slug: `framed-${Date.now().toString(36)}` })
    const invitation = await owner.client.organization.inviteMember({ email, role: 'member', organizationId: org.data!.id })
    const pages = [
      ['/accept-invitation/:id, signed in', `/accept-invitation/${invitation.data!.id}`, { cookie }],
      ['/accept-invitation/:id, signed out', `/accept-invitation/${invitation.data!.id}`, {}],
      ['/accept-invitation of nothing', '/accept-invitation/00000000-0000-4000-8000-000000000000', {}],
      ['the docs page', '/docs', {}],
      ['the error page', '/error?error=oops', {}],
      ['Better Auth’s error page', '/api/auth/error?error=oops', {}],
    ] as const
    for (const [label, path, headers] of pages) {
      const res = await appFetch(`${svc.url}${path}`, { headers, redirect: 'manual' })
      await res.arrayBuffer()
      t.match(res.headers.get('content-type'), /^text\/html/, `${label}: an HTML answer (${res.status})`)
      t.equal(res.headers.get('x-frame-options'), 'DENY', `${label}: X-Frame-Options DENY`)
      const csp = res.headers.get('content-security-policy') ?? ''
      t.match(csp, /(^|;\s*)frame-ancestors 'none'(;|$)/, `${label}: CSP frame-ancestors 'none'`)
      t.equal(csp.match(/frame-ancestors/g)?.length, 1, `${label}: one frame-ancestors directive`)
    }
  })

  t.test('a trusted origin may preflight every operation of the document', async (t) => {
    const doc = (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> }
    let checked = 0
    for (const [path, ops] of Object.entries(doc.paths)) {
      const concrete = path.replace(/\{[^}]+\}/g, 'x')
      for (const method of Object.keys(ops)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
        const res = await appFetch(`${svc.url}${concrete}`, {
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
    const foreign = await appFetch(`${svc.url}/api/device/delete`, {
      method: 'OPTIONS',
      headers: { origin: FOREIGN, 'access-control-request-method': 'DELETE' },
    })
    t.equal(foreign.headers.get('access-control-allow-origin'), null, 'a foreign origin is not allowed')
  })

  t.test('revoke-session takes the signed token (set-auth-token) and refuses a forged one', async (t) => {
    const signIn = async () => {
      const res = await appFetch(`${svc.url}/api/auth/sign-in/email`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: svc.url },
        body: JSON.stringify({ email, password: 'correct-horse-battery' }),
      })
      t.equal(res.status, 200, 'signed in again')
      return { bare: (await res.json()).token as string, signed: res.headers.get('set-auth-token')! }
    }
    const session = async (credential: string) =>
      (await (await appFetch(`${svc.url}/api/auth/get-session`, { headers: { authorization: `Bearer ${credential}` } })).json()) as unknown
    const revoke = (tokenValue: string, path = '/api/auth/revoke-session') =>
      appFetch(`${svc.url}${path}`, {
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
