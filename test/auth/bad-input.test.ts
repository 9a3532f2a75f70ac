// Bad input against the root paths and /api/auth: every refusal is a 4xx with a JSON body
// { message: string, code: string }, and nothing here ever produces a 5xx.
import t from 'tap'
import { createHmac } from 'node:crypto'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { countMail, waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type ErrorBody = { message: string; code: string; [k: string]: unknown }

const BODY_LIMIT = 16 * 1024
const PASSWORD = 'correct-horse-battery'

let svc: TestApp
let email: string
let userToken: string
/** Every status seen in this file, to prove at the end that none was a 5xx. */
const seen: Array<{ label: string; status: number }> = []

t.before(async () => {
  svc = await startApp(t, { env: { BODY_LIMIT: String(BODY_LIMIT) } })
  const { client } = makeClient(svc.url)
  email = uniqueEmail('bad-input')
  userToken = (await signUp(client, email, PASSWORD)).token
})

/**
 * A request as a browser page on the service's own origin would send it (Node's fetch sends
 * Sec-Fetch-Mode, so Better Auth's CSRF check wants an Origin header on sign-in and sign-up).
 */
async function call(label: string, path: string, init: RequestInit & { noOrigin?: boolean } = {}) {
  const headers = new Headers(init.headers)
  if (!init.noOrigin && !headers.has('origin')) headers.set('origin', svc.url)
  const res = await appFetch(svc.url + path, { ...init, headers, redirect: 'manual' })
  seen.push({ label, status: res.status })
  return res
}

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

/** Asserts the status, a JSON content type, and a { message, code } body with no stack. */
async function expectError(t: Test, res: Response, status: number, code?: string | RegExp): Promise<ErrorBody> {
  t.equal(res.status, status, `status ${status}`)
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, 'JSON error body')
  const text = await res.text()
  let body: ErrorBody
  try {
    body = JSON.parse(text) as ErrorBody
  } catch {
    t.fail(`error body is not JSON: ${text.slice(0, 200)}`)
    return { message: '', code: '' }
  }
  t.type(body.message, 'string', 'message is a string')
  t.ok(body.message.length > 0, 'message is not empty')
  t.type(body.code, 'string', 'code is a string')
  t.match(body.code, /^[A-Z][A-Z0-9_]*$/, 'code is UPPER_SNAKE')
  if (code !== undefined) t.match(body.code, code, `code ${code}`)
  t.notOk('stack' in body, 'no stack trace')
  t.notMatch(text, /\n\s+at .+\(.+:\d+:\d+\)/, 'no stack frames in the body')
  return body
}

const bases = ['', '/api/auth']

t.test('sign-up with missing fields is 400 naming the missing field', async (t) => {
  for (const base of bases) {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['no email', { password: PASSWORD, name: 'X' }, /email/],
      ['no password', { email: uniqueEmail(), name: 'X' }, /password/],
      ['no name', { email: uniqueEmail(), password: PASSWORD }, /name/],
      ['empty object', {}, /email/],
    ]
    for (const [label, body, field] of cases) {
      const res = await call(`sign-up ${label}`, `${base}/sign-up/email`, json(body))
      const err = await expectError(t, res, 400, 'VALIDATION_ERROR')
      t.match(err.message, field, `${base || 'root'} sign-up ${label}: message names the field`)
    }
  }
})

t.test('sign-in with missing fields is 400', async (t) => {
  for (const base of bases) {
    for (const [label, body, field] of [
      ['no password', { email }, /password/],
      ['no email', { password: PASSWORD }, /email/],
      ['empty object', {}, /email/],
    ] as Array<[string, Record<string, unknown>, RegExp]>) {
      const res = await call(`sign-in ${label}`, `${base}/sign-in/email`, json(body))
      const err = await expectError(t, res, 400, 'VALIDATION_ERROR')
      t.match(err.message, field)
    }
  }
})

t.test('wrong types are 400 and never create or sign in an account', async (t) => {
  for (const base of bases) {
    const numberEmail = await call('sign-up email number', `${base}/sign-up/email`, json({ email: 12345, password: PASSWORD, name: 'X' }))
    t.match((await expectError(t, numberEmail, 400, 'VALIDATION_ERROR')).message, /email.*number/)

    const victim = uniqueEmail('typed')
    const objectPassword = await call(
      'sign-up password object',
      `${base}/sign-up/email`,
      json({ email: victim, password: { $ne: '' }, name: 'X' }),
    )
    t.match((await expectError(t, objectPassword, 400, 'VALIDATION_ERROR')).message, /password.*object/)
    const arrayName = await call(
      'sign-up name array',
      `${base}/sign-up/email`,
      json({ email: victim, password: PASSWORD, name: ['a', 'b'] }),
    )
    await expectError(t, arrayName, 400, 'VALIDATION_ERROR')
    // Nothing was created: the address can still sign up normally (and was never mailed).
    t.equal(await countMail(svc.dataDir, victim, 'verify-email'), 0, 'no verification mail for a refused sign-up')

    const signInObject = await call('sign-in password object', `${base}/sign-in/email`, json({ email, password: { $gt: '' } }))
    t.match((await expectError(t, signInObject, 400, 'VALIDATION_ERROR')).message, /password.*object/)
    const signInNumber = await call('sign-in email number', `${base}/sign-in/email`, json({ email: 42, password: PASSWORD }))
    await expectError(t, signInNumber, 400, 'VALIDATION_ERROR')
    const signInBool = await call('sign-in password boolean', `${base}/sign-in/email`, json({ email, password: true }))
    await expectError(t, signInBool, 400, 'VALIDATION_ERROR')
  }
})

t.test('a JSON body that is not an object is 400', async (t) => {
  for (const raw of ['[1,2]', 'null', '"text"', '42', 'true']) {
    const res = await call(`non-object ${raw}`, '/sign-up/email', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    })
    await expectError(t, res, 400, 'VALIDATION_ERROR')
  }
})

t.test('invalid e-mail addresses are 400', async (t) => {
  for (const base of bases) {
    for (const bad of ['not-an-email', 'a@', '@example.com', 'two@@example.com', '']) {
      const up = await call(`sign-up email ${bad}`, `${base}/sign-up/email`, json({ email: bad, password: PASSWORD, name: 'X' }))
      const err = await expectError(t, up, 400, 'VALIDATION_ERROR')
      t.match(err.message, /email/i, `sign-up ${JSON.stringify(bad)}`)
    }
    const inRes = await call('sign-in bad email', `${base}/sign-in/email`, json({ email: 'not-an-email', password: PASSWORD }))
    await expectError(t, inRes, 400, /INVALID_EMAIL|VALIDATION_ERROR/)
  }
  const reset = await call('forget-password bad email', '/forget-password', json({ email: 'nope' }))
  await expectError(t, reset, 400, 'VALIDATION_ERROR')
})

t.test('too-short and too-long passwords are 400 and create nothing', async (t) => {
  for (const base of bases) {
    const shortEmail = uniqueEmail('short')
    const short = await call('sign-up short password', `${base}/sign-up/email`, json({ email: shortEmail, password: 'short', name: 'X' }))
    const err = await expectError(t, short, 400, 'PASSWORD_TOO_SHORT')
    t.match(err.message, /short/i)
    const seven = await call('sign-up 7 chars', `${base}/sign-up/email`, json({ email: shortEmail, password: '1234567', name: 'X' }))
    await expectError(t, seven, 400, 'PASSWORD_TOO_SHORT')
    const long = await call(
      'sign-up long password',
      `${base}/sign-up/email`,
      json({ email: shortEmail, password: 'x'.repeat(129), name: 'X' }),
    )
    await expectError(t, long, 400, 'PASSWORD_TOO_LONG')
    // The refused address is still free.
    const signIn = await call('sign-in refused account', `${base}/sign-in/email`, json({ email: shortEmail, password: 'short' }))
    await expectError(t, signIn, 401, 'INVALID_EMAIL_OR_PASSWORD')
  }
  const change = await call(
    'change-password short',
    '/change-password',
    json({ currentPassword: PASSWORD, newPassword: 'short' }, { authorization: `Bearer ${userToken}` }),
  )
  await expectError(t, change, 400, 'PASSWORD_TOO_SHORT')
})

t.test('a duplicate sign-up is refused', async (t) => {
  const res = await call('duplicate sign-up', '/sign-up/email', json({ email, password: 'another-password-1', name: 'Dup' }))
  await expectError(t, res, 422, 'USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL')
  const upper = await call(
    'duplicate sign-up upper case',
    '/api/auth/sign-up/email',
    json({ email: email.toUpperCase(), password: 'another-password-1', name: 'Dup' }),
  )
  await expectError(t, upper, 422, 'USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL')
  // The original password still works: the refused sign-up changed nothing.
  const ok = await call('sign-in after dup', '/sign-in/email', json({ email, password: PASSWORD }))
  t.equal(ok.status, 200)
})

t.test('wrong password is 401 with the same answer as an unknown account', async (t) => {
  for (const base of bases) {
    const wrong = await call('wrong password', `${base}/sign-in/email`, json({ email, password: 'wrong-password-123' }))
    const a = await expectError(t, wrong, 401, 'INVALID_EMAIL_OR_PASSWORD')
    t.notOk(
      wrong.headers.getSetCookie().some((c) => /session_token=[^;]+/.test(c) && !/max-age=0/i.test(c)),
      'no session cookie',
    )
    const unknown = await call(
      'unknown account',
      `${base}/sign-in/email`,
      json({ email: uniqueEmail('ghost'), password: 'wrong-password-123' }),
    )
    const b = await expectError(t, unknown, 401, 'INVALID_EMAIL_OR_PASSWORD')
    t.equal(a.message, b.message, 'no hint whether the account exists')
  }
  const change = await call(
    'change-password wrong current',
    '/change-password',
    json({ currentPassword: 'wrong-password-123', newPassword: 'brand-new-password' }, { authorization: `Bearer ${userToken}` }),
  )
  await expectError(t, change, 400, 'INVALID_PASSWORD')
  const still = await call('sign-in after refused change', '/sign-in/email', json({ email, password: PASSWORD }))
  t.equal(still.status, 200, 'the password is unchanged')
})

t.test('oversized bodies are 413 {message, code}', async (t) => {
  const big = JSON.stringify({ email, password: PASSWORD, name: 'x'.repeat(BODY_LIMIT) })
  for (const path of ['/sign-up/email', '/sign-in/email', '/api/auth/sign-in/email', '/no-such-path']) {
    const res = await call(`oversized ${path}`, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big })
    await expectError(t, res, 413, 'PAYLOAD_TOO_LARGE')
  }
  // Operations that need a session refuse an anonymous request before reading its body.
  for (const path of ['/api/auth/organization/create', '/account-info']) {
    const res = await call(`oversized anonymous ${path}`, path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    })
    await expectError(t, res, 401, 'UNAUTHORIZED')
  }
  const form = await call('oversized form', '/api/auth/sign-in/email', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email, password: 'p'.repeat(BODY_LIMIT) }).toString(),
  })
  await expectError(t, form, 413, 'PAYLOAD_TOO_LARGE')

  // Without a Content-Length (chunked upload) the limit holds too.
  const chunk = new TextEncoder().encode(`{"email":"${'a'.repeat(4096)}`)
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let sent = 0; sent <= BODY_LIMIT * 2; sent += chunk.length) controller.enqueue(chunk)
      controller.close()
    },
  })
  const chunked = await call('oversized chunked', '/api/auth/sign-in/email', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: stream,
    duplex: 'half',
  } as RequestInit)
  await expectError(t, chunked, 413, 'PAYLOAD_TOO_LARGE')

  // Just under the limit is fine (it reaches Better Auth, which then judges the content).
  const under = JSON.stringify({ email, password: 'wrong-password-123', padding: 'x'.repeat(BODY_LIMIT - 200) })
  t.ok(Buffer.byteLength(under) < BODY_LIMIT)
  const fine = await call('under the limit', '/sign-in/email', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: under,
  })
  await expectError(t, fine, 401, 'INVALID_EMAIL_OR_PASSWORD')
})

t.test('malformed JSON is 400 INVALID_JSON', async (t) => {
  const bodies = ['{"email": ', '{email: "a@b.c"}', "{'a':1}", '{"a":1,}', 'not json at all']
  for (const path of ['/sign-in/email', '/sign-up/email', '/api/auth/sign-in/email', '/api/auth/sign-out', '/account-info']) {
    for (const raw of bodies) {
      const res = await call(`malformed ${path}`, path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${userToken}` },
        body: raw,
      })
      await expectError(t, res, 400, 'INVALID_JSON')
    }
  }
  const vendor = await call('malformed vendor json', '/api/auth/sign-in/email', {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.api+json' },
    body: '{"a":',
  })
  await expectError(t, vendor, 400, 'INVALID_JSON')
  // The session used above is intact: a malformed sign-out did not sign anyone out.
  const session = await call('get-session after malformed', '/get-session', { headers: { authorization: `Bearer ${userToken}` } })
  t.equal(session.status, 200)
})

t.test('form-urlencoded bodies on the JSON endpoints', async (t) => {
  // Better Auth accepts form posts on purpose (progressive enhancement, OAuth form_post
  // callbacks), so a correct form sign-in from a trusted origin works like JSON...
  for (const base of bases) {
    const ok = await call('form sign-in', `${base}/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email, password: PASSWORD }).toString(),
    })
    t.equal(ok.status, 200, `${base || 'root'}: a correct form sign-in is accepted`)
    const okBody = (await ok.json()) as { token: string; user: { email: string } }
    t.equal(okBody.user.email, email)
    t.type(okBody.token, 'string')

    // ...and every wrong one is a 4xx {message, code}.
    const wrong = await call('form wrong password', `${base}/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email, password: 'wrong-password-123' }).toString(),
    })
    await expectError(t, wrong, 401, 'INVALID_EMAIL_OR_PASSWORD')
    const missing = await call('form missing password', `${base}/sign-in/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email }).toString(),
    })
    await expectError(t, missing, 400, 'VALIDATION_ERROR')
    const garbage = await call('form garbage', `${base}/sign-up/email`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '%%%&&&===',
    })
    await expectError(t, garbage, 400, 'VALIDATION_ERROR')
  }
  // A form posted by a browser without an Origin, or from a foreign one (login CSRF), is refused.
  const csrf = await call('form without origin', '/sign-in/email', {
    noOrigin: true,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site', 'sec-fetch-dest': 'document' },
    body: new URLSearchParams({ email, password: PASSWORD }).toString(),
  })
  await expectError(t, csrf, 403, 'MISSING_OR_NULL_ORIGIN')
  const foreign = await call('form foreign origin', '/sign-in/email', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
    body: new URLSearchParams({ email, password: PASSWORD }).toString(),
  })
  await expectError(t, foreign, 403, 'INVALID_ORIGIN')
  // Our own JSON route reads only JSON: a form body there is a 400, not a 500.
  const accountInfo = await call('form account-info', '/account-info', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${userToken}` },
    body: 'accountId=abc',
  })
  await expectError(t, accountInfo, 400, 'VALIDATION_ERROR')
  // Other media types are 415.
  for (const [label, headers] of [
    ['text/plain', { 'content-type': 'text/plain' }],
    ['multipart', { 'content-type': 'multipart/form-data; boundary=x' }],
  ] as Array<[string, Record<string, string>]>) {
    const res = await call(`media ${label}`, '/api/auth/sign-in/email', {
      method: 'POST',
      headers,
      body: JSON.stringify({ email, password: PASSWORD }),
    })
    await expectError(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  }
})

t.test('unknown paths are 404 {message, code}', async (t) => {
  const cases: Array<[string, string]> = [
    ['GET', '/no-such-path'],
    ['POST', '/no-such-path'],
    ['GET', '/api/no-such-path'],
    ['DELETE', '/sign-in/email'],
    ['GET', '/sign-in/email'],
    ['GET', '/api/auth/no-such-path'],
    ['POST', '/api/auth/no-such-path'],
    ['GET', '/api/auth/sign-in/email'],
    ['GET', '/api/auth/'],
    ['GET', '/api/auth/passkey/no-such-op'],
    ['POST', '/api/auth/organization/no-such-op'],
  ]
  for (const [method, path] of cases) {
    const res = await call(`${method} ${path}`, path, method === 'POST' ? json({}) : { method })
    await expectError(t, res, 404, 'NOT_FOUND')
  }
})

t.test('requests without a session on protected operations are 401', async (t) => {
  const cases: Array<[string, string, RequestInit]> = [
    ['GET', '/get-session', {}],
    ['GET', '/list-sessions', {}],
    ['POST', '/update-user', json({ name: 'Nobody' })],
    ['POST', '/change-password', json({ currentPassword: PASSWORD, newPassword: 'another-password' })],
    ['GET', '/api/auth/list-accounts', {}],
    ['POST', '/api/auth/organization/create', json({ name: 'Org', slug: `org-${Date.now()}` })],
  ]
  for (const [method, path, init] of cases) {
    const res = await call(`no session ${method} ${path}`, path, { method, ...init })
    await expectError(t, res, 401)
  }
  const bogus = await call('bogus bearer', '/list-sessions', { headers: { authorization: 'Bearer bogus.token.value' } })
  await expectError(t, bogus, 401)
})

t.test('password reset tokens: used once, and tampered or unknown tokens refused', async (t) => {
  const before = await countMail(svc.dataDir, email, 'reset-password')
  const req = await call('request reset', '/forget-password', json({ email, redirectTo: '/reset' }))
  t.equal(req.status, 200)
  const mail = await waitForMail(svc.dataDir, email, 'reset-password', { after: before })
  const link = new URL(mail.link!)
  const token = link.pathname.split('/').pop()!
  t.ok(token.length >= 16, 'the link carries a token')

  // A tampered token in the link lands on the callback with an error, not a reset form.
  const tamperedLink = await call('tampered reset link', `/reset-password/${token.slice(0, -3)}zzz${link.search}`)
  t.equal(tamperedLink.status, 302)
  t.match(tamperedLink.headers.get('location'), /\/reset\?error=INVALID_TOKEN$/)
  const tampered = await call(
    'tampered reset',
    '/reset-password',
    json({ token: `${token.slice(0, -3)}zzz`, newPassword: 'tampered-password-1' }),
  )
  await expectError(t, tampered, 400, 'INVALID_TOKEN')
  const missing = await call('reset no token', '/reset-password', json({ newPassword: 'tampered-password-1' }))
  await expectError(t, missing, 400, /INVALID_TOKEN|VALIDATION_ERROR/)
  const shortPw = await call('reset short password', '/reset-password', json({ token, newPassword: 'short' }))
  await expectError(t, shortPw, 400, 'PASSWORD_TOO_SHORT')

  // The real link works once...
  const follow = await call('reset link', link.pathname + link.search)
  t.equal(follow.status, 302)
  t.match(follow.headers.get('location'), new RegExp(`/reset\\?token=${token}$`))
  const first = await call('reset once', '/reset-password', json({ token, newPassword: 'reset-password-one' }))
  t.equal(first.status, 200)
  t.same(await first.json(), { status: true })
  // ...and not twice.
  const second = await call('reset twice', '/reset-password', json({ token, newPassword: 'reset-password-two' }))
  await expectError(t, second, 400, 'INVALID_TOKEN')
  const reused = await call('reset link reused', link.pathname + link.search)
  t.equal(reused.status, 302)
  t.match(reused.headers.get('location'), /\/reset\?error=INVALID_TOKEN$/)

  // The first reset took effect, the second did not; old sessions were revoked.
  const withSecond = await call('sign-in second password', '/sign-in/email', json({ email, password: 'reset-password-two' }))
  await expectError(t, withSecond, 401, 'INVALID_EMAIL_OR_PASSWORD')
  const withFirst = await call('sign-in first password', '/sign-in/email', json({ email, password: 'reset-password-one' }))
  t.equal(withFirst.status, 200)
  const fresh = ((await withFirst.json()) as { token: string }).token
  const oldSession = await call('old session after reset', '/get-session', { headers: { authorization: `Bearer ${userToken}` } })
  await expectError(t, oldSession, 401, 'UNAUTHORIZED')
  userToken = fresh
  // Put the original password back for the tests that follow.
  const restore = await call(
    'restore password',
    '/change-password',
    json({ currentPassword: 'reset-password-one', newPassword: PASSWORD }, { authorization: `Bearer ${userToken}` }),
  )
  t.equal(restore.status, 200)
})

function signHs256(payload: Record<string, unknown>, secret: string): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const head = `${enc({ alg: 'HS256' })}.${enc(payload)}`
  return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`
}

t.test('e-mail verification tokens: tampered, foreign and expired tokens refused', async (t) => {
  const target = uniqueEmail('verify')
  const { client } = makeClient(svc.url)
  await signUp(client, target)
  const mail = await waitForMail(svc.dataDir, target, 'verify-email')
  const link = new URL(mail.link!)
  const token = link.searchParams.get('token')!
  const [head, payload, sig] = token.split('.') as [string, string, string]

  const flippedSig = await call('verify tampered signature', `/verify-email?token=${head}.${payload}.${sig.slice(0, -4)}AAAA`)
  await expectError(t, flippedSig, 401, 'INVALID_TOKEN')
  // Pointing a valid signature at somebody else's address.
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), email })).toString('base64url')
  const swapped = await call('verify swapped payload', `/verify-email?token=${head}.${forged}.${sig}`)
  await expectError(t, swapped, 401, 'INVALID_TOKEN')
  const garbage = await call('verify garbage', '/api/auth/verify-email?token=garbage')
  await expectError(t, garbage, 401, 'INVALID_TOKEN')
  const none = await call('verify no token', '/verify-email')
  await expectError(t, none, 400, 'VALIDATION_ERROR')
  // Signed with another secret.
  const otherSecret = await call(
    'verify other secret',
    `/verify-email?token=${signHs256({ email: target, iat: 1, exp: 4102444800 }, 'y'.repeat(32))}`,
  )
  await expectError(t, otherSecret, 401, 'INVALID_TOKEN')
  // Correctly signed but expired (as an old link would be).
  const now = Math.floor(Date.now() / 1000)
  const expiredToken = signHs256({ email: target, iat: now - 7200, exp: now - 3600 }, svc.config.authSecret)
  const expired = await call('verify expired', `/verify-email?token=${expiredToken}`)
  await expectError(t, expired, 401, 'TOKEN_EXPIRED')
  // With a callback, the refusal is a redirect carrying the error code.
  const redirected = await call('verify expired with callback', `/verify-email?token=${expiredToken}&callbackURL=%2Fdone`)
  t.equal(redirected.status, 302)
  t.match(redirected.headers.get('location'), /\/done\?error=TOKEN_EXPIRED$/)

  // None of that verified the account; the real link does.
  const session = await client.getSession()
  t.equal(session.data?.user.emailVerified, false, 'still unverified after the refused tokens')
  const real = await call('verify real', `/verify-email?token=${token}`)
  t.equal(real.status, 200)
  const verified = await client.getSession({ query: { disableCookieCache: true } })
  t.equal(verified.data?.user.emailVerified, true)
})

t.test('one-time codes: wrong, reused and exhausted codes refused', async (t) => {
  const target = uniqueEmail('otp')
  const { client } = makeClient(svc.url)
  await signUp(client, target)

  const send = await call('otp send', '/api/auth/email-otp/send-verification-otp', json({ email: target, type: 'sign-in' }))
  t.equal(send.status, 200)
  const mail = await waitForMail(svc.dataDir, target, 'otp')
  const code = mail.code!
  const wrongCode = code === '000000' ? '111111' : '000000'
  const wrong = await call('otp wrong', '/api/auth/sign-in/email-otp', json({ email: target, otp: wrongCode }))
  await expectError(t, wrong, 400, 'INVALID_OTP')
  const typed = await call('otp as number', '/api/auth/sign-in/email-otp', json({ email: target, otp: Number(code) }))
  await expectError(t, typed, 400, 'VALIDATION_ERROR')
  const ok = await call('otp right', '/api/auth/sign-in/email-otp', json({ email: target, otp: code }))
  t.equal(ok.status, 200, 'the right code signs in once')
  const again = await call('otp reused', '/api/auth/sign-in/email-otp', json({ email: target, otp: code }))
  await expectError(t, again, 400, 'INVALID_OTP')

  // Three wrong tries use the code up: even the right code is refused afterwards.
  const before = await countMail(svc.dataDir, target, 'otp')
  await call('otp send 2', '/api/auth/email-otp/send-verification-otp', json({ email: target, type: 'sign-in' }))
  const second = (await waitForMail(svc.dataDir, target, 'otp', { after: before })).code!
  const miss = second === '000000' ? '111111' : '000000'
  for (let i = 0; i < 3; i++) {
    const res = await call('otp miss', '/api/auth/sign-in/email-otp', json({ email: target, otp: miss }))
    await expectError(t, res, 400, 'INVALID_OTP')
  }
  const exhausted = await call('otp exhausted', '/api/auth/sign-in/email-otp', json({ email: target, otp: second }))
  const err = await expectError(t, exhausted, 403, 'TOO_MANY_ATTEMPTS')
  t.match(err.message, /attempt/i)

  const noCode = await call('otp never sent', '/api/auth/sign-in/email-otp', json({ email: uniqueEmail('nocode'), otp: '123456' }))
  await expectError(t, noCode, 400, 'INVALID_OTP')
})

t.test('magic links work once', async (t) => {
  const target = uniqueEmail('magic')
  const send = await call('magic send', '/api/auth/sign-in/magic-link', json({ email: target, callbackURL: '/welcome' }))
  t.equal(send.status, 200)
  const link = new URL((await waitForMail(svc.dataDir, target, 'magic-link')).link!)
  const first = await call('magic first', link.pathname + link.search)
  t.equal(first.status, 302)
  t.match(first.headers.get('location'), /\/welcome$/)
  t.ok(
    first.headers.getSetCookie().some((c) => /session_token=[^;]+/.test(c)),
    'the first use signs in',
  )
  const second = await call('magic reused', link.pathname + link.search)
  t.equal(second.status, 302)
  t.match(second.headers.get('location'), /\/welcome\?error=INVALID_TOKEN$/, 'the second use is sent back with an error')
  t.notOk(
    second.headers.getSetCookie().some((c) => /session_token=[^;]+/.test(c) && !/max-age=0/i.test(c)),
    'and gets no session',
  )
  const noToken = await call('magic no token', link.pathname)
  await expectError(t, noToken, 400, 'VALIDATION_ERROR')
})

t.test('no request in this file produced a 5xx', async (t) => {
  const fivexx = seen.filter((s) => s.status >= 500)
  t.same(fivexx, [], 'no 5xx')
  t.ok(seen.length > 100, `checked ${seen.length} requests`)
})
