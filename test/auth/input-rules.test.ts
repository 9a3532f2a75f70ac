// What callers may write through the account layer: `balance` never (credits move only through
// the ledger), bounded and typed user and organization fields, known role names, no NUL
// characters anywhere; and one-time secrets (codes, links, reset tokens) stored only hashed,
// refused once expired.
import t from 'tap'
import { eq } from 'drizzle-orm'
import { startApp, type TestApp } from '../helpers/app.js'
import { signUpAdmin } from '../helpers/admin.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { waitForMail } from '../helpers/outbox.js'
import { expireVerifications, storedVerifications } from '../helpers/verification.js'
import { creditLedger } from '../../src/credits/tables.js'
import { user as userTable } from '../../src/db/schema.js'
import { appFetch } from '../helpers/app-fetch.js'

type Body = { message: string; code: string; [k: string]: unknown }

const BOSS = 'boss@example.com'
let svc: TestApp
let adminToken: string
/** Every status seen in this file, to prove at the end that none was a 5xx. */
const seen: Array<{ label: string; status: number }> = []

t.before(async () => {
  svc = await startApp(t, { env: { ADMIN_EMAILS: BOSS } })
  adminToken = (await signUpAdmin(svc, BOSS)).token
})

async function call(label: string, method: string, path: string, body?: unknown, token?: string) {
  const headers: Record<string, string> = { origin: svc.url }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (token) headers.authorization = `Bearer ${token}`
  const res = await appFetch(svc.url + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: 'manual',
  })
  seen.push({ label, status: res.status })
  const text = await res.text()
  let json: Body | undefined
  try {
    json = text ? (JSON.parse(text) as Body) : undefined
  } catch {
    json = undefined
  }
  return { status: res.status, body: json, headers: res.headers }
}
const post = (label: string, path: string, body: unknown, token?: string) => call(label, 'POST', path, body, token)

async function refused(t: Tap, res: Awaited<ReturnType<typeof call>>, status: number, code: string) {
  t.equal(res.status, status, `${status} ${code}`)
  t.equal(res.body?.code, code)
  t.type(res.body?.message, 'string')
  return res.body
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0]

async function balanceOf(userId: string): Promise<string | undefined> {
  const [row] = await svc.app.database.db.select({ balance: userTable.balance }).from(userTable).where(eq(userTable.id, userId))
  return row?.balance
}

t.test('balance is never set through the account layer, only through the ledger', async (t) => {
  const email = uniqueEmail('rich')
  const signUpRes = await post('sign-up with balance', '/sign-up/email', {
    email,
    password: 'correct-horse-battery',
    name: 'Rich',
    balance: '1000',
  })
  t.equal(signUpRes.status, 200, 'sign-up ignores a balance it was sent')
  const { token } = signUpRes.body as unknown as { token: string; user: { id: string } }
  const userId = (signUpRes.body as unknown as { user: { id: string } }).user.id
  t.equal(Number(await balanceOf(userId)), 0, 'the new account starts at zero')

  await refused(t, await post('update-user balance', '/update-user', { balance: '5000' }, token), 400, 'FIELD_NOT_ALLOWED')

  const adminSet = await post(
    'admin update-user balance',
    '/api/auth/admin/update-user',
    { userId, data: { balance: '1000000' } },
    adminToken,
  )
  const err = await refused(t, adminSet, 400, 'FIELD_NOT_ALLOWED')
  t.match(err?.message, /balance/)
  t.match(err?.message, /\/api\/admin\/credits/, 'the refusal names the way credits are given')
  await refused(
    t,
    await post('admin negative balance', '/api/auth/admin/update-user', { userId, data: { balance: '-50' } }, adminToken),
    400,
    'FIELD_NOT_ALLOWED',
  )
  await refused(
    t,
    await post(
      'admin create-user balance',
      '/api/auth/admin/create-user',
      { email: uniqueEmail('made'), password: 'correct-horse-battery', name: 'Made', data: { balance: '777' } },
      adminToken,
    ),
    400,
    'FIELD_NOT_ALLOWED',
  )
  const made = await post(
    'admin create-user',
    '/api/auth/admin/create-user',
    { email: uniqueEmail('made'), password: 'correct-horse-battery', name: 'Made', role: 'user' },
    adminToken,
  )
  t.equal(made.status, 200)
  t.equal(Number(await balanceOf((made.body as unknown as { user: { id: string } }).user.id)), 0)

  const session = await call('get-session', 'GET', '/get-session', undefined, token)
  t.equal(session.status, 200)
  t.equal((session.body as unknown as { user: { balance: string } }).user.balance, '0.00', 'get-session still shows zero')
  t.equal(Number(await balanceOf(userId)), 0)
  const ledger = await svc.app.database.db.select().from(creditLedger).where(eq(creditLedger.userId, userId))
  t.same(ledger, [], 'and no ledger row was needed because nothing changed')

  // The ledger's way works, and get-session shows it.
  const credited = await post('admin credit', '/api/admin/credits', { userId, amount: '12.50' }, adminToken)
  t.equal(credited.status, 200)
  const after = await call('get-session after credit', 'GET', '/get-session', undefined, token)
  t.equal((after.body as unknown as { user: { balance: string } }).user.balance, '12.50')
})

t.test('user fields are typed and bounded', async (t) => {
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('fields'))
  await refused(t, await post('name as number', '/update-user', { name: 5 }, token), 400, 'VALIDATION_ERROR')
  await refused(t, await post('name too long', '/update-user', { name: 'n'.repeat(201) }, token), 400, 'VALIDATION_ERROR')
  await refused(t, await post('blank name', '/update-user', { name: '   ' }, token), 400, 'VALIDATION_ERROR')
  await refused(
    t,
    await post('image too long', '/update-user', { image: `https://img.example.com/${'a'.repeat(2100)}` }, token),
    400,
    'VALIDATION_ERROR',
  )
  await refused(t, await post('phone as object', '/update-user', { phoneNumber: { a: 1 } }, token), 400, 'VALIDATION_ERROR')
  const phone = await refused(t, await post('phone not E.164', '/update-user', { phoneNumber: '555-1234' }, token), 400, 'VALIDATION_ERROR')
  t.match(phone?.message, /E\.164/)
  await refused(t, await post('phone too long', '/update-user', { phoneNumber: `+1${'5'.repeat(50)}` }, token), 400, 'VALIDATION_ERROR')
  const good = await post('good update', '/update-user', { name: 'Ada Lovelace', phoneNumber: '+447700900123' }, token)
  t.equal(good.status, 200, 'valid values are stored')
  const session = await call('get-session', 'GET', '/get-session', undefined, token)
  const u = (session.body as unknown as { user: Record<string, unknown> }).user
  t.equal(u.name, 'Ada Lovelace')
  t.equal(u.phone_number, '+447700900123')

  await refused(
    t,
    await post('sign-up long name', '/sign-up/email', {
      email: uniqueEmail('long'),
      password: 'correct-horse-battery',
      name: 'n'.repeat(201),
    }),
    400,
    'VALIDATION_ERROR',
  )
  await refused(
    t,
    await post('sign-up phone object', '/sign-up/email', {
      email: uniqueEmail('ph'),
      password: 'correct-horse-battery',
      name: 'P',
      phoneNumber: { a: 1 },
    }),
    400,
    'VALIDATION_ERROR',
  )
  await refused(
    t,
    await post('sign-up long email', '/sign-up/email', {
      email: `${'e'.repeat(250)}@example.com`,
      password: 'correct-horse-battery',
      name: 'E',
    }),
    400,
    'VALIDATION_ERROR',
  )
})

t.test('administrators set only known fields and known roles', async (t) => {
  const { client } = makeClient(svc.url)
  const { userId } = await signUp(client, uniqueEmail('managed'))
  const update = (label: string, data: Record<string, unknown>) => post(label, '/api/auth/admin/update-user', { userId, data }, adminToken)
  await refused(t, await update('banExpires garbage', { banExpires: 'garbage' }), 400, 'FIELD_NOT_ALLOWED')
  await refused(t, await update('createdAt', { createdAt: 'x' }), 400, 'FIELD_NOT_ALLOWED')
  await refused(t, await update('id', { id: 'other' }), 400, 'FIELD_NOT_ALLOWED')
  await refused(t, await update('name number', { name: 42 }), 400, 'VALIDATION_ERROR')
  const renamed = await update('rename', { name: 'Renamed', phoneNumber: '+15551234567' })
  t.equal(renamed.status, 200)
  t.equal((renamed.body as unknown as { name: string }).name, 'Renamed')

  const emperor = await post('set-role unknown', '/api/auth/admin/set-role', { userId, role: 'emperor' }, adminToken)
  await refused(t, emperor, 400, 'YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE')
  await refused(
    t,
    await post(
      'create-user unknown role',
      '/api/auth/admin/create-user',
      { email: uniqueEmail('r'), password: 'correct-horse-battery', name: 'R', role: 'emperor' },
      adminToken,
    ),
    400,
    'YOU_ARE_NOT_ALLOWED_TO_SET_NON_EXISTENT_VALUE',
  )
  const promoted = await post('set-role admin', '/api/auth/admin/set-role', { userId, role: 'admin' }, adminToken)
  t.equal(promoted.status, 200)
  const [row] = await svc.app.database.db.select({ role: userTable.role }).from(userTable).where(eq(userTable.id, userId))
  t.equal(row?.role, 'admin', 'a known role is set')
  await refused(
    t,
    await post('ban reason too long', '/api/auth/admin/ban-user', { userId, banReason: 'r'.repeat(1001) }, adminToken),
    400,
    'VALIDATION_ERROR',
  )
})

t.test('organization names and slugs are bounded', async (t) => {
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('org'))
  await refused(
    t,
    await post('slug huge', '/api/auth/organization/create', { name: 'Huge', slug: 's'.repeat(12_000) }, token),
    400,
    'VALIDATION_ERROR',
  )
  await refused(
    t,
    await post('slug spaces', '/api/auth/organization/create', { name: 'Spaces', slug: 'has spaces' }, token),
    400,
    'VALIDATION_ERROR',
  )
  await refused(
    t,
    await post('org name long', '/api/auth/organization/create', { name: 'n'.repeat(201), slug: `long-${Date.now()}` }, token),
    400,
    'VALIDATION_ERROR',
  )
  await refused(
    t,
    await post('check-slug huge', '/api/auth/organization/check-slug', { slug: 's'.repeat(500) }, token),
    400,
    'VALIDATION_ERROR',
  )
  const slug = `fine-${Date.now()}`
  const ok = await post('org ok', '/api/auth/organization/create', { name: 'Fine Org', slug }, token)
  t.equal(ok.status, 200)
  t.equal((ok.body as unknown as { slug: string }).slug, slug)
  const id = (ok.body as unknown as { id: string }).id
  await refused(
    t,
    await post('org update slug', '/api/auth/organization/update', { organizationId: id, data: { slug: 'x'.repeat(101) } }, token),
    400,
    'VALIDATION_ERROR',
  )
  // Better Auth drops keys it does not know: `data` holding only such keys was an UPDATE of no
  // columns, a 500. They are refused by name; metadata (nested as deep as the body allows) is fine.
  for (const [label, data] of [
    ['nested data', { data: { name: 'Renamed' } }],
    ['an unknown nested object', { settings: { theme: { dark: true } } }],
    ['the id', { id: { a: 1 } }],
    ['createdAt', { createdAt: { a: 1 } }],
    ['a known field beside an unknown one', { name: 'Renamed', extra: [1, 2] }],
  ] as const) {
    const res = await refused(
      t,
      await post(`org update ${label}`, '/api/auth/organization/update', { organizationId: id, data }, token),
      400,
      'FIELD_NOT_ALLOWED',
    )
    t.match(res?.message, /field.? not allowed/, label)
  }
  const renamed = await post(
    'org update metadata',
    '/api/auth/organization/update',
    { organizationId: id, data: { name: 'Renamed Org', metadata: { a: { b: [1, { c: 'd' }] } } } },
    token,
  )
  t.equal(renamed.status, 200, 'name and nested metadata are updated')
  t.same((renamed.body as unknown as { metadata: unknown }).metadata, { a: { b: [1, { c: 'd' }] } })
})

t.test('revoke-session refuses a token holding an encoded NUL (it decodes to one)', async (t) => {
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('revoke-nul'))
  for (const path of ['/api/auth/revoke-session', '/revoke-session']) {
    for (const value of ['abc%00def', '%00', `${'a'.repeat(32)}%00.c2ln`]) {
      await refused(t, await post(`revoke ${value}`, path, { token: value }, token), 400, 'INVALID_TOKEN')
    }
  }
  const still = await call('session after', 'GET', '/api/auth/get-session', undefined, token)
  t.equal((still.body as unknown as { session?: { token: string } })?.session?.token, token, 'the caller’s session is untouched')
})

t.test('a NUL character is refused everywhere before it reaches the database', async (t) => {
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('nul'))
  const cases: Array<[string, string, string, unknown?]> = [
    ['update-user name', 'POST', '/update-user', { name: 'a\u0000b' }],
    ['org slug', 'POST', '/api/auth/organization/create', { name: 'N', slug: 'a\u0000b' }],
    ['a NUL in a key', 'POST', '/update-user', { 'na\u0000me': 'x' }],
    [
      'device init model',
      'POST',
      '/api/device/init',
      { display: { width: 800, height: 480, palette: 'bw' }, model: 'frame\u0000', firmware: '1.0.0' },
    ],
    ['device path', 'GET', '/api/device/a%00b'],
    ['query string', 'GET', '/api/device/x/events?cursor=a%00'],
    ['prompt text', 'POST', '/api/prompts', { text: 'a lighthouse\u0000' }],
  ]
  for (const [label, method, path, body] of cases) {
    await refused(t, await call(label, method, path, body, token), 400, 'INVALID_CHARACTER')
  }
  const form = await appFetch(`${svc.url}/api/auth/callback/github`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'state=a%00&code=abc',
    redirect: 'manual',
  })
  seen.push({ label: 'form NUL', status: form.status })
  t.equal(form.status, 400, 'a form body too')
})

t.test('one-time codes, sign-in links and reset tokens are stored hashed', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('secrets')
  await signUp(client, email)

  t.equal((await post('otp send', '/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })).status, 200)
  const code = (await waitForMail(svc.dataDir, email, 'otp')).code!
  t.equal((await post('magic send', '/api/auth/sign-in/magic-link', { email, callbackURL: '/welcome' })).status, 200)
  const magic = new URL((await waitForMail(svc.dataDir, email, 'magic-link')).link!)
  const magicToken = magic.searchParams.get('token')!
  t.equal((await post('reset send', '/request-password-reset', { email, redirectTo: '/reset' })).status, 200)
  const reset = new URL((await waitForMail(svc.dataDir, email, 'reset-password')).link!)
  const resetToken = reset.pathname.split('/').pop()!

  const stored = await storedVerifications(svc)
  t.ok(stored.length >= 3, `${stored.length} values stored`)
  const everything = stored.map((r) => `${r.identifier} ${r.value}`).join('\n')
  t.notOk(everything.includes(code), 'the one-time code is not stored as sent')
  t.notOk(everything.includes(magicToken), 'the sign-in link token is not stored as sent')
  t.notOk(everything.includes(resetToken), 'the reset token is not stored as sent')

  // Hashed, they still work: the code signs in, the link signs in, the reset token resets.
  t.equal((await post('otp sign-in', '/api/auth/sign-in/email-otp', { email, otp: code })).status, 200)
  const opened = await call('magic open', 'GET', magic.pathname + magic.search)
  t.equal(opened.status, 302)
  t.match(opened.headers.get('location'), /\/welcome$/)
  t.equal((await post('reset', '/reset-password', { token: resetToken, newPassword: 'another-long-password' })).status, 200)
  const signIn = await post('sign-in new password', '/sign-in/email', { email, password: 'another-long-password' })
  t.equal(signIn.status, 200)
})

t.test('expired codes, links and reset tokens are refused', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('expiry')
  await signUp(client, email)
  await post('otp send', '/api/auth/email-otp/send-verification-otp', { email, type: 'sign-in' })
  const code = (await waitForMail(svc.dataDir, email, 'otp')).code!
  await post('magic send', '/api/auth/sign-in/magic-link', { email, callbackURL: '/welcome' })
  const magic = new URL((await waitForMail(svc.dataDir, email, 'magic-link')).link!)
  await post('reset send', '/request-password-reset', { email, redirectTo: '/reset' })
  const resetToken = new URL((await waitForMail(svc.dataDir, email, 'reset-password')).link!).pathname.split('/').pop()!
  t.ok((await expireVerifications(svc)) >= 3, 'their expiry is now in the past')

  await refused(t, await post('otp expired', '/api/auth/sign-in/email-otp', { email, otp: code }), 400, 'OTP_EXPIRED')
  const opened = await call('magic expired', 'GET', magic.pathname + magic.search)
  t.equal(opened.status, 302)
  t.match(opened.headers.get('location'), /error=INVALID_TOKEN/, 'the expired link is sent back with an error')
  t.notOk(
    opened.headers.getSetCookie().some((c) => /session_token=[^;]+/.test(c) && !/max-age=0/i.test(c)),
    'and signs nobody in',
  )
  await refused(
    t,
    await post('reset expired', '/reset-password', { token: resetToken, newPassword: 'another-long-password' }),
    400,
    'INVALID_TOKEN',
  )
  const oldPassword = await post('old password still works', '/sign-in/email', { email, password: 'correct-horse-battery' })
  t.equal(oldPassword.status, 200, 'the password did not change')
})

t.test('the JWT client plugin gets a token our routes accept', async (t) => {
  const { client } = makeClient(svc.url)
  await signUp(client, uniqueEmail('jwt'))
  const res = await client.token()
  t.notOk(res.error, 'token() succeeds')
  const jwt = res.data!.token
  t.match(jwt, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a compact JWT')
  const payload = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { sub: string; exp: number }
  t.ok(payload.exp * 1000 > Date.now(), 'not expired')
  const list = await call('devices with JWT', 'GET', '/api/device', undefined, jwt)
  t.equal(list.status, 200, 'GET /api/device accepts it')
  const forged = `${jwt.slice(0, -4)}AAAA`
  await refused(t, await call('devices with forged JWT', 'GET', '/api/device', undefined, forged), 401, 'UNAUTHORIZED')
})

t.test('no request in this file produced a 5xx', async (t) => {
  t.same(
    seen.filter((s) => s.status >= 500),
    [],
    'no 5xx',
  )
  t.ok(seen.length > 50, `checked ${seen.length} requests`)
})
