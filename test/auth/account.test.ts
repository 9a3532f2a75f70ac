// Account flows through the official Better Auth client (as a companion app uses it) and the
// interface's root paths through plain fetch: sign-up/in, sessions, password change and reset,
// user update and deletion, e-mail verification and change, linked accounts, and Table C.
import { request } from 'node:http'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail, type Client, type CookieJar } from '../helpers/client.js'
import { countMail, waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

const PASSWORD = 'correct-horse-battery'
const SESSION_COOKIE = 'better-auth.session_token'

let svc: TestApp

t.before(async () => {
  svc = await startApp(t)
})

type Person = { email: string; password: string; client: Client; jar: CookieJar; token: string; userId: string }
type RootSession = { session: Record<string, unknown>; user: Record<string, unknown> }
type ErrorBody = { message: string; code: string }

/** A fresh account, signed up through the official client (its jar holds the session cookie). */
async function person(prefix = 'acct'): Promise<Person> {
  const { client, jar } = makeClient(svc.url)
  const email = uniqueEmail(prefix)
  const { token, userId } = await signUp(client, email, PASSWORD)
  return { email, password: PASSWORD, client, jar, token, userId }
}

/** A new device signing in: its own client and jar. */
async function signIn(email: string, password: string) {
  const { client, jar } = makeClient(svc.url)
  const res = await client.signIn.email({ email, password })
  return { client, jar, res, token: res.data?.token ?? null }
}

/** The interface's root GET /get-session with a Bearer token. */
async function rootSession(token: string): Promise<{ status: number; body: RootSession & ErrorBody }> {
  const res = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, body: (await res.json()) as RootSession & ErrorBody }
}

async function rootPost(path: string, body: unknown, token?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (token) headers.authorization = `Bearer ${token}`
  const res = await appFetch(`${svc.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body), redirect: 'manual' })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as Record<string, unknown> & ErrorBody }
}

/** A POST the way curl sends it: no Origin, no Fetch Metadata headers. */
function rawPost(url: string, body: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body)
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

/** Opens a link from an e-mail as a browser would, without following the redirect. */
function open(link: string, headers: Record<string, string> = {}) {
  return appFetch(link, { redirect: 'manual', headers })
}

/** The session token inside a Set-Cookie of a response, if any. */
function sessionCookieToken(res: Response): string | undefined {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';')
    const eq = pair!.indexOf('=')
    if (pair!.slice(0, eq) !== SESSION_COOKIE) continue
    const value = decodeURIComponent(pair!.slice(eq + 1))
    if (value) return value.split('.')[0]
  }
  return undefined
}

/** Follows the newest sign-up/verification mail of an address so its e-mail counts as verified. */
async function verifyEmailOf(email: string, after = 0) {
  const mail = await waitForMail(svc.dataDir, email, 'verify-email', { after })
  const res = await open(mail.link!)
  if (res.status !== 302) throw new Error(`verification link answered ${res.status}`)
}

t.test('sign-up, sign-in, get-session and sign-out through the client', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('signup')
  const up = await client.signUp.email({ email, password: PASSWORD, name: 'Ada Lovelace' })
  t.equal(up.error, null, 'sign-up succeeds')
  t.equal(up.data!.user.email, email)
  t.equal(up.data!.user.name, 'Ada Lovelace')
  t.equal(up.data!.user.emailVerified, false, 'a new address starts unverified')
  t.type(up.data!.token, 'string')

  const mine = await client.getSession()
  t.equal(mine.data!.user.email, email, 'the client is signed in after sign-up')
  t.equal(mine.data!.session.token, up.data!.token)
  t.equal(mine.data!.session.userId, up.data!.user.id)

  const root = await rootSession(up.data!.token!)
  t.equal(root.status, 200, 'the sign-up token works on root /get-session')
  t.equal(root.body.user.email, email)
  t.equal(root.body.user.name, 'Ada Lovelace')

  const again = await makeClient(svc.url).client.signUp.email({ email, password: PASSWORD, name: 'Someone else' })
  t.equal(again.error?.status, 422, 'the same address cannot sign up twice')
  t.type(again.error?.message, 'string')

  const wrong = await signIn(email, 'not-the-password')
  t.equal(wrong.res.error?.status, 401, 'a wrong password is refused')
  t.match(wrong.res.error?.message, /invalid email or password/i)
  t.equal(wrong.jar.size, 0, 'no session cookie for a failed sign-in')
  const unknown = await signIn(uniqueEmail('nobody'), PASSWORD)
  t.equal(unknown.res.error?.status, 401, 'an unknown address gets the same answer')

  const other = await signIn(email, PASSWORD)
  t.equal(other.res.error, null, 'sign-in with the right password succeeds')
  t.equal(other.res.data!.user.id, up.data!.user.id)
  t.not(other.token, up.data!.token, 'each sign-in is its own session')
  const viaClient = await other.client.getSession()
  t.equal(viaClient.data!.user.id, up.data!.user.id, 'client get-session shows the user')
  t.equal(viaClient.data!.session.token, other.token)
  t.equal((await rootSession(other.token!)).status, 200, 'the sign-in token works on root /get-session')

  const out = await other.client.signOut()
  t.same(out.data, { success: true }, 'sign-out')
  t.equal((await other.client.getSession()).data, null, 'the client is signed out')
  t.equal((await rootSession(other.token!)).status, 401, 'the signed-out token is dead')
  t.equal((await rootSession(up.data!.token!)).status, 200, 'the other session is untouched')

  const anon = makeClient(svc.url).client
  t.equal((await anon.getSession()).data, null, 'no session without a cookie')
})

t.test('list sessions, revoke one, revoke others, revoke all', async (t) => {
  const a = await person('sessions')
  const b = await signIn(a.email, a.password)
  const c = await signIn(a.email, a.password)
  const d = await signIn(a.email, a.password)

  const listed = await a.client.listSessions()
  t.equal(listed.error, null)
  const tokens = listed.data!.map((s) => s.token).sort()
  t.same(tokens, [a.token, b.token, c.token, d.token].sort(), 'all four sessions are listed')
  for (const s of listed.data!) t.equal(s.userId, a.userId)

  const revoked = await a.client.revokeSession({ token: b.token! })
  t.same(revoked.data, { status: true }, 'revoke one session')
  const bRoot = await rootSession(b.token!)
  t.equal(bRoot.status, 401, 'the revoked token gets 401 on root /get-session')
  t.equal(bRoot.body.code, 'UNAUTHORIZED')
  t.type(bRoot.body.message, 'string')
  t.equal((await b.client.getSession()).data, null, 'the revoked device sees no session')
  t.equal((await rootSession(a.token)).status, 200, 'the revoking session still works')
  t.equal((await rootSession(c.token!)).status, 200, 'other sessions still work')
  t.equal((await a.client.listSessions()).data!.length, 3, 'three sessions remain')

  // Someone else's token cannot be revoked by this account.
  const stranger = await person('stranger')
  const foreign = await a.client.revokeSession({ token: stranger.token })
  t.same(foreign.data, { status: true }, 'the answer does not reveal foreign tokens')
  t.equal((await rootSession(stranger.token)).status, 200, "another account's session is not revoked")

  const others = await a.client.revokeOtherSessions()
  t.same(others.data, { status: true }, 'revoke other sessions')
  t.equal((await rootSession(c.token!)).status, 401, 'other session c is revoked')
  t.equal((await rootSession(d.token!)).status, 401, 'other session d is revoked')
  t.equal((await rootSession(a.token)).status, 200, 'the current session survives')
  const remaining = await a.client.listSessions()
  t.same(
    remaining.data!.map((s) => s.token),
    [a.token],
    'only the current session is listed',
  )

  const e = await signIn(a.email, a.password)
  t.equal((await rootSession(e.token!)).status, 200)
  const all = await a.client.revokeSessions()
  t.same(all.data, { status: true }, 'revoke all sessions')
  t.equal((await rootSession(a.token)).status, 401, 'the current session is revoked too')
  t.equal((await rootSession(e.token!)).status, 401, 'and every other one')
  t.equal((await a.client.getSession()).data, null, 'the client is signed out')
  const after = await a.client.listSessions()
  t.equal(after.error?.status, 401, 'listing sessions now needs a session')
})

t.test('change password', async (t) => {
  const a = await person('chpw')
  const b = await signIn(a.email, a.password)

  const wrong = await a.client.changePassword({ currentPassword: 'not-my-password', newPassword: 'brand-new-password-1' })
  t.equal(wrong.error?.status, 400, 'a wrong current password is refused')
  t.equal(wrong.error?.code, 'INVALID_PASSWORD')
  t.type(wrong.error?.message, 'string')
  const short = await a.client.changePassword({ currentPassword: a.password, newPassword: 'short' })
  t.equal(short.error?.status, 400, 'a too short new password is refused')
  t.equal(short.error?.code, 'PASSWORD_TOO_SHORT')
  t.equal((await signIn(a.email, a.password)).res.error, null, 'the password is unchanged after refusals')

  const first = 'brand-new-password-1'
  const changed = await a.client.changePassword({ currentPassword: a.password, newPassword: first })
  t.equal(changed.error, null, 'change password')
  t.equal(changed.data!.token, null, 'no new session without revokeOtherSessions')
  t.equal(changed.data!.user.id, a.userId)
  t.equal((await signIn(a.email, a.password)).res.error?.status, 401, 'the old password stops working')
  t.equal((await signIn(a.email, first)).res.error, null, 'the new password works')
  t.equal((await rootSession(b.token!)).status, 200, 'other sessions survive without revokeOtherSessions')
  t.equal((await rootSession(a.token)).status, 200, 'the current session survives')

  const second = 'brand-new-password-2'
  const revoking = await a.client.changePassword({ currentPassword: first, newPassword: second, revokeOtherSessions: true })
  t.equal(revoking.error, null, 'change password with revokeOtherSessions')
  const fresh = revoking.data!.token
  t.type(fresh, 'string', 'a new session token is returned')
  t.equal((await rootSession(b.token!)).status, 401, 'other sessions are revoked')
  t.equal((await rootSession(a.token)).status, 401, 'the old token of the changing session is replaced')
  const now = await rootSession(fresh!)
  t.equal(now.status, 200, 'the new token works')
  t.equal(now.body.user.id, a.userId)
  t.equal((await a.client.getSession()).data?.session.token, fresh, 'the client carries on with the new session')
  t.equal((await signIn(a.email, first)).res.error?.status, 401, 'the previous password stops working')
  t.equal((await signIn(a.email, second)).res.error, null, 'the newest password works')
})

t.test('update user: name, image, phone number', async (t) => {
  const a = await person('update')
  // phoneNumber is one of our additional user fields; the plain client does not infer its type.
  const fields = { name: 'Grace Hopper', image: 'https://img.example.com/grace.png', phoneNumber: '+15551234567' }
  const upd = await a.client.updateUser(fields as { name: string; image: string })
  t.equal(upd.error, null, 'update user')
  t.same(upd.data, { status: true })

  const root = await rootSession(a.token)
  t.equal(root.status, 200)
  t.equal(root.body.user.name, 'Grace Hopper', 'root /get-session shows the new name')
  t.equal(root.body.user.image, 'https://img.example.com/grace.png', 'and the new image')
  t.equal(root.body.user.phone_number, '+15551234567', 'and the new phone number')
  t.equal(root.body.user.phone_number_verified, false, 'a phone number set by the user is not verified')
  t.equal(root.body.user.email, a.email, 'the e-mail is unchanged')
  const viaClient = await a.client.getSession()
  t.equal(viaClient.data!.user.name, 'Grace Hopper', 'client get-session shows the new name')

  const cleared = await a.client.updateUser({ image: null })
  t.equal(cleared.error, null, 'the image can be cleared')
  t.equal((await rootSession(a.token)).body.user.image, null)

  const email = await a.client.updateUser({ email: uniqueEmail('sneaky') } as unknown as { name: string })
  t.equal(email.error?.status, 400, 'the e-mail cannot be changed through update-user')
  t.equal(email.error?.code, 'EMAIL_CAN_NOT_BE_UPDATED')
  // (The client turns an empty call into a GET, so this one goes over plain fetch.)
  const empty = await rootPost('/update-user', {}, a.token)
  t.equal(empty.status, 400, 'an empty update is refused')
  t.match(empty.body.message, /no fields/i)
  const verified = await rootPost('/update-user', { phoneNumberVerified: true }, a.token)
  t.equal(verified.status, 400, 'phone_number_verified is not settable by the user')
  t.type(verified.body.message, 'string')
  t.equal((await rootSession(a.token)).body.user.phone_number_verified, false)

  const anon = await rootPost('/update-user', { name: 'Nobody' })
  t.equal(anon.status, 401, 'update-user needs a session')
  t.type(anon.body.message, 'string')
})

t.test('delete user with password, confirmed through the e-mailed link', async (t) => {
  const a = await person('delete')
  const wrong = await a.client.deleteUser({ password: 'not-my-password' })
  t.equal(wrong.error?.status, 400, 'a wrong password is refused')
  t.equal(wrong.error?.code, 'INVALID_PASSWORD')
  t.equal(await countMail(svc.dataDir, a.email, 'delete-account'), 0, 'no mail after a refused request')

  const asked = await a.client.deleteUser({ password: a.password })
  t.same(asked.data, { success: true, message: 'Verification email sent' }, 'deletion must be confirmed by e-mail')
  t.equal((await rootSession(a.token)).status, 200, 'the account still exists until confirmed')

  const mail = await waitForMail(svc.dataDir, a.email, 'delete-account')
  t.equal(mail.subject, 'Confirm deleting your account')
  const link = new URL(mail.link!)
  t.equal(link.pathname, '/api/auth/delete-user/callback')
  const token = link.searchParams.get('token')!
  t.match(token, /^[0-9a-z]{32}$/)

  const noSession = await open(mail.link!)
  t.equal(noSession.status, 401, 'the link opened without the session is refused (it needs the session that asked)')
  t.type(((await noSession.json()) as ErrorBody).message, 'string')
  t.equal((await rootSession(a.token)).status, 200, 'the account still exists')

  // Opened in the browser that holds the session: the cookie jar of the client.
  const confirmed = await open(`${svc.url}/delete-user/callback${link.search}`, { cookie: a.jar.header() })
  t.equal(confirmed.status, 302, 'the root callback path deletes and redirects')
  t.equal(confirmed.headers.get('location'), '/', 'to the callback URL')
  t.ok(
    confirmed.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=;`) || /max-age=0/i.test(c)),
    'the session cookie is cleared',
  )

  const root = await rootSession(a.token)
  t.equal(root.status, 401, 'the session of the deleted account is gone')
  t.equal((await signIn(a.email, a.password)).res.error?.status, 401, 'the deleted account cannot sign in')
  const reused = await open(`${svc.url}/delete-user/callback${link.search}`, { authorization: `Bearer ${a.token}` })
  t.equal(reused.status, 401, 'opening the link again: the deleted account has no session left')

  // The address is free again: a new account can be made with it.
  const { client } = makeClient(svc.url)
  const again = await client.signUp.email({ email: a.email, password: PASSWORD, name: 'Reborn' })
  t.equal(again.error, null, 'the address can sign up again')
  t.not(again.data!.user.id, a.userId, 'as a new account')
})

t.test('delete user: token from the mail posted through the client', async (t) => {
  const a = await person('delete2')
  const b = await signIn(a.email, a.password)
  const badCallback = await a.client.deleteUser({ callbackURL: 'https://evil.example.com/' })
  t.equal(badCallback.error?.status, 403, 'an untrusted callback URL is refused')
  t.equal(badCallback.error?.code, 'INVALID_CALLBACK_URL')

  const asked = await a.client.deleteUser({ callbackURL: '/goodbye' })
  t.same(asked.data, { success: true, message: 'Verification email sent' }, 'a fresh session may ask without a password')
  const mail = await waitForMail(svc.dataDir, a.email, 'delete-account')
  const link = new URL(mail.link!)
  t.equal(link.searchParams.get('callbackURL'), '/goodbye', 'the link carries the callback URL')

  const bogus = await a.client.deleteUser({ token: 'not-the-token' })
  t.equal(bogus.error?.status, 404, 'a wrong token is refused')
  t.equal(bogus.error?.code, 'INVALID_TOKEN')
  t.equal((await rootSession(a.token)).status, 200, 'the account still exists')

  const done = await a.client.deleteUser({ token: link.searchParams.get('token')! })
  t.same(done.data, { success: true, message: 'User deleted' }, 'the token deletes the account')
  t.equal((await rootSession(a.token)).status, 401, 'the session is gone')
  t.equal((await rootSession(b.token!)).status, 401, 'every session of the account is gone')
  t.equal((await signIn(a.email, a.password)).res.error?.status, 401, 'the account cannot sign in')
})

t.test('password reset through the e-mailed link (request-password-reset)', async (t) => {
  const a = await person('reset')
  const b = await signIn(a.email, a.password)
  const anon = makeClient(svc.url).client

  const unknown = uniqueEmail('unknown')
  const quiet = await anon.requestPasswordReset({ email: unknown, redirectTo: '/reset' })
  t.equal(quiet.data?.status, true, 'an unknown address gets the same answer')
  t.equal(await countMail(svc.dataDir, unknown, 'reset-password'), 0, 'and no mail')

  const evil = await anon.requestPasswordReset({ email: a.email, redirectTo: 'https://evil.example.com/steal' })
  t.equal(evil.error?.status, 403, 'an untrusted redirect is refused')
  t.equal(evil.error?.code, 'INVALID_REDIRECT_URL')

  const asked = await anon.requestPasswordReset({ email: a.email, redirectTo: '/reset' })
  t.equal(asked.error, null)
  t.equal(asked.data!.status, true, 'reset requested')
  t.type(asked.data!.message, 'string')
  const mail = await waitForMail(svc.dataDir, a.email, 'reset-password')
  t.equal(mail.subject, 'Reset your password')
  const link = new URL(mail.link!)
  const m = /^\/api\/auth\/reset-password\/([^/]+)$/.exec(link.pathname)
  t.ok(m, 'the link points at /api/auth/reset-password/<token>')
  const token = m![1]!
  t.equal(link.searchParams.get('callbackURL'), '/reset')

  const opened = await open(mail.link!)
  t.equal(opened.status, 302, 'the link redirects')
  t.equal(opened.headers.get('location'), `${svc.url}/reset?token=${token}`, 'to the callback page with the token')
  const rootOpened = await open(`${svc.url}/reset-password/${token}?callbackURL=${encodeURIComponent('/reset')}`)
  t.equal(rootOpened.status, 302, 'the root GET /reset-password/{token} redirects too')
  t.equal(rootOpened.headers.get('location'), `${svc.url}/reset?token=${token}`)
  const fake = await open(`${svc.url}/api/auth/reset-password/not-a-token?callbackURL=%2Freset`)
  t.equal(fake.status, 302)
  t.equal(fake.headers.get('location'), `${svc.url}/reset?error=INVALID_TOKEN`, 'an unknown token redirects with an error')

  const tooShort = await anon.resetPassword({ newPassword: 'short', token })
  t.equal(tooShort.error?.status, 400, 'a too short new password is refused')
  const newPassword = 'reset-password-new-1'
  const reset = await anon.resetPassword({ newPassword, token })
  t.equal(reset.error, null, 'reset password with the token')
  t.same(reset.data, { status: true })

  t.equal((await rootSession(a.token)).status, 401, 'old sessions are revoked')
  t.equal((await rootSession(b.token!)).status, 401, 'all of them')
  t.equal((await signIn(a.email, a.password)).res.error?.status, 401, 'the old password stops working')
  t.equal((await signIn(a.email, newPassword)).res.error, null, 'the new password works')

  const reused = await rootPost('/reset-password', { token, newPassword: 'reset-password-new-2' })
  t.equal(reused.status, 400, 'a reused token is refused')
  t.equal(reused.body.code, 'INVALID_TOKEN')
  t.type(reused.body.message, 'string')
  t.equal((await signIn(a.email, 'reset-password-new-2')).res.error?.status, 401, 'the reused token changed nothing')
  const reopened = await open(mail.link!)
  t.equal(reopened.headers.get('location'), `${svc.url}/reset?error=INVALID_TOKEN`, 'the used link now redirects with an error')
})

t.test("password reset through the interface's root POST /forget-password", async (t) => {
  const a = await person('forget')
  const before = await countMail(svc.dataDir, a.email, 'reset-password')
  const asked = await rootPost('/forget-password', { email: a.email, redirectTo: `${svc.url}/reset` })
  t.equal(asked.status, 200, 'POST /forget-password works')
  t.equal(asked.body.status, true)
  t.type(asked.body.message, 'string')
  const mail = await waitForMail(svc.dataDir, a.email, 'reset-password', { after: before })
  const link = new URL(mail.link!)
  t.equal(link.searchParams.get('callbackURL'), `${svc.url}/reset`)
  const opened = await open(`${svc.url}${link.pathname.replace('/api/auth', '')}${link.search}`)
  t.equal(opened.status, 302)
  const landing = new URL(opened.headers.get('location')!)
  t.equal(landing.pathname, '/reset')
  const token = landing.searchParams.get('token')!
  t.ok(token, 'the redirect carries the token')

  const missing = await rootPost('/reset-password', { newPassword: 'forget-password-new-1' })
  t.equal(missing.status, 400, 'a reset without a token is refused')
  t.type(missing.body.message, 'string')
  const bogus = await rootPost('/reset-password', { token: 'not-a-token', newPassword: 'forget-password-new-1' })
  t.equal(bogus.status, 400, 'an unknown token is refused')
  t.equal(bogus.body.code, 'INVALID_TOKEN')

  const reset = await rootPost('/reset-password', { token, newPassword: 'forget-password-new-1' })
  t.equal(reset.status, 200, 'root POST /reset-password sets the new password')
  t.same(reset.body, { status: true })
  t.equal((await rootSession(a.token)).status, 401, 'the old session is revoked')
  t.equal((await signIn(a.email, 'forget-password-new-1')).res.error, null, 'the new password works')
  const again = await rootPost('/reset-password', { token, newPassword: 'forget-password-new-2' })
  t.equal(again.status, 400, 'the token works only once')
  t.type(again.body.message, 'string')
})

t.test('e-mail verification', async (t) => {
  const a = await person('verify')
  const signupMail = await waitForMail(svc.dataDir, a.email, 'verify-email')
  t.equal(signupMail.subject, 'Verify your e-mail address', 'sign-up sends a verification mail')

  const mismatch = await a.client.sendVerificationEmail({ email: uniqueEmail('other') })
  t.equal(mismatch.error?.status, 400, 'a signed-in user can only verify their own address')
  t.equal(mismatch.error?.code, 'EMAIL_MISMATCH')

  const before = await countMail(svc.dataDir, a.email, 'verify-email')
  const sent = await a.client.sendVerificationEmail({ email: a.email, callbackURL: '/verified' })
  t.same(sent.data, { status: true }, 'send-verification-email')
  const mail = await waitForMail(svc.dataDir, a.email, 'verify-email', { after: before })
  const link = new URL(mail.link!)
  t.equal(link.pathname, '/api/auth/verify-email')
  t.equal(link.searchParams.get('callbackURL'), '/verified')
  const token = link.searchParams.get('token')!

  // A tampered token: one character of the signature changed.
  const [head, payload, sig] = token.split('.') as [string, string, string]
  const i = Math.floor(sig.length / 2)
  const tampered = `${head}.${payload}.${sig.slice(0, i)}${sig[i] === 'A' ? 'B' : 'A'}${sig.slice(i + 1)}`
  const bad = await open(`${svc.url}/api/auth/verify-email?token=${tampered}&callbackURL=%2Fverified`)
  t.equal(bad.status, 302, 'a tampered link redirects')
  t.equal(bad.headers.get('location'), '/verified?error=INVALID_TOKEN', 'with an error')
  t.equal(sessionCookieToken(bad), undefined, 'and signs nobody in')
  const badRoot = await open(`${svc.url}/verify-email?token=${tampered}`)
  t.equal(badRoot.status, 401, 'root GET /verify-email refuses a tampered token')
  const badBody = (await badRoot.json()) as ErrorBody
  t.equal(badBody.code, 'INVALID_TOKEN')
  t.type(badBody.message, 'string')
  t.equal((await rootSession(a.token)).body.user.email_verified, false, 'the address is still unverified')

  const ok = await open(mail.link!)
  t.equal(ok.status, 302, 'the verification link redirects')
  t.equal(ok.headers.get('location'), '/verified', 'to the callback URL')
  const autoToken = sessionCookieToken(ok)
  t.type(autoToken, 'string', 'and signs the user in')
  const root = await rootSession(a.token)
  t.equal(root.body.user.email_verified, true, 'root /get-session shows email_verified true')
  const auto = await rootSession(autoToken!)
  t.equal(auto.status, 200)
  t.equal(auto.body.user.id, a.userId, 'the new session belongs to the verified user')

  const already = await a.client.sendVerificationEmail({ email: a.email })
  t.equal(already.error?.status, 400, 'a verified address is not verified twice')
  t.equal(already.error?.code, 'EMAIL_ALREADY_VERIFIED')

  // The Table C root path verifies too (JSON answer without a callback URL).
  const b = await person('verify-root')
  const bMail = await waitForMail(svc.dataDir, b.email, 'verify-email')
  const bToken = new URL(bMail.link!).searchParams.get('token')!
  const rootVerify = await appFetch(`${svc.url}/verify-email?token=${encodeURIComponent(bToken)}`)
  t.equal(rootVerify.status, 200, 'root GET /verify-email verifies')
  t.same(await rootVerify.json(), { status: true, user: null })
  t.equal((await rootSession(b.token)).body.user.email_verified, true)
})

t.test('change e-mail of a verified account: confirmation to the old address, then verification of the new one', async (t) => {
  const a = await person('chmail')
  await verifyEmailOf(a.email)
  t.equal((await rootSession(a.token)).body.user.email_verified, true)

  const same = await a.client.changeEmail({ newEmail: a.email })
  t.equal(same.error?.status, 400, 'the same address is refused')
  const invalid = await rootPost('/change-email', { newEmail: 'not-an-email' }, a.token)
  t.equal(invalid.status, 400, 'an invalid address is refused')
  t.type(invalid.body.message, 'string')

  const newEmail = uniqueEmail('chmail-new')
  const asked = await a.client.changeEmail({ newEmail, callbackURL: '/changed' })
  t.same(asked.data, { status: true }, 'change-email')
  t.equal((await rootSession(a.token)).body.user.email, a.email, 'nothing changes before confirmation')

  const confirm = await waitForMail(svc.dataDir, a.email, 'change-email')
  t.equal(confirm.to, a.email, 'the confirmation goes to the old address')
  t.match(confirm.text, newEmail, 'and names the new address')
  t.equal(await countMail(svc.dataDir, newEmail, 'verify-email'), 0, 'the new address gets nothing yet')
  const confirmed = await open(confirm.link!)
  t.equal(confirmed.status, 302, 'the confirmation link redirects')
  t.equal(confirmed.headers.get('location'), '/changed')
  t.equal((await rootSession(a.token)).body.user.email, a.email, 'still the old address after the first step')

  const verify = await waitForMail(svc.dataDir, newEmail, 'verify-email')
  t.equal(verify.to, newEmail, 'the new address gets a verification link')
  const verified = await open(verify.link!)
  t.equal(verified.status, 302)
  t.equal(verified.headers.get('location'), '/changed')

  const root = await rootSession(a.token)
  t.equal(root.body.user.email, newEmail, 'the account ends with the new address')
  t.equal(root.body.user.email_verified, true, 'still verified')
  t.equal((await signIn(newEmail, a.password)).res.error, null, 'sign-in with the new address works')
  t.equal((await signIn(a.email, a.password)).res.error?.status, 401, 'the old address no longer signs in')

  // An address that belongs to another account: same answer, nothing sent, nothing changed.
  const taken = await person('chmail-taken')
  const beforeMails = await countMail(svc.dataDir, newEmail, 'change-email')
  const clash = await a.client.changeEmail({ newEmail: taken.email })
  t.same(clash.data, { status: true }, 'the answer does not reveal that the address is taken')
  t.equal(await countMail(svc.dataDir, newEmail, 'change-email'), beforeMails, 'no confirmation is sent')
  t.equal((await rootSession(a.token)).body.user.email, newEmail, 'the address is unchanged')
})

t.test('change e-mail of an unverified account: only the new address is asked', async (t) => {
  const a = await person('chmail-unv')
  const newEmail = uniqueEmail('chmail-unv-new')
  const asked = await a.client.changeEmail({ newEmail })
  t.same(asked.data, { status: true }, 'change-email')
  const verify = await waitForMail(svc.dataDir, newEmail, 'verify-email')
  t.equal(verify.to, newEmail, 'a verification link goes to the new address')
  t.equal(await countMail(svc.dataDir, a.email, 'change-email'), 0, 'no confirmation to the unproven old address')
  t.equal((await rootSession(a.token)).body.user.email, a.email, 'nothing changes before the link is followed')

  const opened = await open(verify.link!)
  t.equal(opened.status, 302)
  const root = await rootSession(a.token)
  t.equal(root.body.user.email, newEmail, 'the account ends with the new address')
  t.equal(root.body.user.email_verified, false, 'which stays unverified, as the old one was')
  t.equal((await signIn(newEmail, a.password)).res.error, null, 'sign-in with the new address works')
})

t.test('list accounts and root POST /account-info', async (t) => {
  const a = await person('accounts')
  const listed = await a.client.listAccounts()
  t.equal(listed.error, null)
  t.equal(listed.data!.length, 1, 'one account: the password')
  const credential = listed.data![0]!
  t.equal(credential.providerId, 'credential')
  t.equal(credential.userId, a.userId)
  t.equal(credential.accountId, a.userId, 'a credential account is keyed by the user id')
  t.same(credential.scopes, [])
  t.notOk('password' in credential, 'no password hash is exposed')

  const root = await appFetch(`${svc.url}/list-accounts`, { headers: { authorization: `Bearer ${a.token}` } })
  t.equal(root.status, 200, 'root GET /list-accounts')
  const rootBody = (await root.json()) as Array<{ id: string; providerId: string }>
  t.same(
    rootBody.map((x) => [x.id, x.providerId]),
    [[credential.id, 'credential']],
  )

  const info = await rootPost('/account-info', { accountId: credential.id }, a.token)
  t.equal(info.status, 400, 'a password account has no provider profile to show')
  t.equal(info.body.code, 'PROVIDER_NOT_CONFIGURED')
  t.match(info.body.message, /social provider/)
  const missing = await rootPost('/account-info', {}, a.token)
  t.equal(missing.status, 400, 'accountId is required')
  t.equal(missing.body.code, 'VALIDATION_ERROR')
  const unknown = await rootPost('/account-info', { accountId: 'no-such-account' }, a.token)
  t.equal(unknown.status, 400, 'an unknown account is refused')
  t.equal(unknown.body.code, 'ACCOUNT_NOT_FOUND')
  const other = await person('accounts-other')
  const foreign = await rootPost('/account-info', { accountId: credential.id }, other.token)
  t.equal(foreign.status, 400, "another user's account is not found")
  t.equal(foreign.body.code, 'ACCOUNT_NOT_FOUND')
  const anon = await rootPost('/account-info', { accountId: credential.id })
  t.equal(anon.status, 401, 'account-info needs a session')
  t.type(anon.body.message, 'string')
})

t.test('every Table C root path answers', async (t) => {
  const a = await person('tablec')
  const [credential] = (await a.client.listAccounts()).data!
  const auth = { authorization: `Bearer ${a.token}` }
  const json = { 'content-type': 'application/json' }
  const newcomer = uniqueEmail('tablec-new')

  // `origin`: sign-up and sign-in check Fetch Metadata; Node's fetch sends `Sec-Fetch-Mode: cors`,
  // so like a browser it must name its origin there (curl sends neither; see the test below).
  type Case = {
    method: 'GET' | 'POST'
    path: string
    body?: unknown
    auth?: boolean
    origin?: boolean
    status: number
    check?: (body: any, res: Response) => void
  }
  const cases: Case[] = [
    { method: 'GET', path: '/get-session', auth: true, status: 200, check: (b) => t.equal(b.user.email, a.email) },
    {
      method: 'POST',
      path: '/sign-up/email',
      body: { email: newcomer, password: PASSWORD, name: 'New' },
      origin: true,
      status: 200,
      check: (b) => t.equal(b.user.email, newcomer),
    },
    {
      method: 'POST',
      path: '/sign-in/email',
      body: { email: a.email, password: a.password },
      origin: true,
      status: 200,
      check: (b) => t.type(b.token, 'string'),
    },
    { method: 'POST', path: '/sign-in/email', body: { email: a.email, password: 'wrong-password' }, origin: true, status: 401 },
    { method: 'POST', path: '/sign-in/email', body: { email: a.email }, origin: true, status: 400 },
    { method: 'POST', path: '/forget-password', body: { email: a.email }, status: 200, check: (b) => t.equal(b.status, true) },
    { method: 'POST', path: '/request-password-reset', body: { email: a.email }, status: 200, check: (b) => t.equal(b.status, true) },
    {
      method: 'POST',
      path: '/reset-password',
      body: { token: 'bogus', newPassword: 'whatever-password' },
      status: 400,
      check: (b) => t.equal(b.code, 'INVALID_TOKEN'),
    },
    {
      method: 'GET',
      path: '/reset-password/bogus?callbackURL=%2Freset',
      status: 302,
      check: (_b, res) => t.equal(res.headers.get('location'), `${svc.url}/reset?error=INVALID_TOKEN`),
    },
    { method: 'GET', path: '/verify-email?token=bogus', status: 401, check: (b) => t.equal(b.code, 'INVALID_TOKEN') },
    {
      method: 'POST',
      path: '/send-verification-email',
      body: { email: a.email },
      auth: true,
      status: 200,
      check: (b) => t.same(b, { status: true }),
    },
    {
      method: 'POST',
      path: '/change-email',
      body: { newEmail: a.email },
      auth: true,
      status: 400,
      check: (b) => t.match(b.message, /same/i),
    },
    {
      method: 'POST',
      path: '/change-password',
      body: { currentPassword: 'wrong-password', newPassword: 'whatever-password' },
      auth: true,
      status: 400,
      check: (b) => t.equal(b.code, 'INVALID_PASSWORD'),
    },
    { method: 'POST', path: '/update-user', body: { name: 'Table C' }, auth: true, status: 200, check: (b) => t.same(b, { status: true }) },
    {
      method: 'POST',
      path: '/delete-user',
      body: { password: 'wrong-password' },
      auth: true,
      status: 400,
      check: (b) => t.equal(b.code, 'INVALID_PASSWORD'),
    },
    {
      method: 'GET',
      path: '/list-sessions',
      auth: true,
      status: 200,
      check: (b) => t.ok(Array.isArray(b) && b.some((s: { token: string }) => s.token === a.token)),
    },
    {
      method: 'POST',
      path: '/revoke-session',
      body: { token: 'not-a-session' },
      auth: true,
      status: 200,
      check: (b) => t.same(b, { status: true }),
    },
    { method: 'POST', path: '/revoke-other-sessions', body: {}, auth: true, status: 200, check: (b) => t.same(b, { status: true }) },
    { method: 'POST', path: '/link-social', body: {}, auth: true, status: 400, check: (b) => t.match(b.message, /provider/) },
    { method: 'GET', path: '/list-accounts', auth: true, status: 200, check: (b) => t.equal(b[0].id, credential!.id) },
    { method: 'GET', path: '/delete-user/callback', auth: true, status: 400, check: (b) => t.match(b.message, /token/) },
    {
      method: 'POST',
      path: '/unlink-account',
      body: { accountId: credential!.id },
      auth: true,
      status: 400,
      check: (b) => t.equal(b.code, 'FAILED_TO_UNLINK_LAST_ACCOUNT'),
    },
    {
      method: 'POST',
      path: '/refresh-token',
      body: { accountId: credential!.id },
      auth: true,
      status: 400,
      check: (b) => t.equal(b.code, 'PROVIDER_NOT_SUPPORTED'),
    },
    {
      method: 'POST',
      path: '/get-access-token',
      body: { accountId: credential!.id },
      auth: true,
      status: 400,
      check: (b) => t.equal(b.code, 'PROVIDER_NOT_SUPPORTED'),
    },
    {
      method: 'POST',
      path: '/account-info',
      body: { accountId: credential!.id },
      auth: true,
      status: 400,
      check: (b) => t.equal(b.code, 'PROVIDER_NOT_CONFIGURED'),
    },
    { method: 'GET', path: '/ok', status: 200, check: (b) => t.same(b, { ok: true }) },
    { method: 'GET', path: '/error?error=access_denied', status: 200 },
    { method: 'POST', path: '/revoke-sessions', body: {}, auth: true, status: 200, check: (b) => t.same(b, { status: true }) },
  ]

  for (const c of cases) {
    const headers: Record<string, string> = {
      ...(c.body !== undefined ? json : {}),
      ...(c.auth ? auth : {}),
      ...(c.origin ? { origin: svc.url } : {}),
    }
    const res = await appFetch(`${svc.url}${c.path}`, {
      method: c.method,
      headers,
      body: c.body !== undefined ? JSON.stringify(c.body) : undefined,
      redirect: 'manual',
    })
    const label = `${c.method} ${c.path.split('?')[0]}`
    t.equal(res.status, c.status, `${label} answers ${c.status}`)
    const type = res.headers.get('content-type') ?? ''
    if (res.status === 302) {
      await res.arrayBuffer()
      c.check?.(null, res)
      continue
    }
    if (c.path.startsWith('/error')) {
      t.match(type, /text\/html/, `${label} is an HTML page`)
      t.match(await res.text(), /access denied/)
      continue
    }
    t.match(type, /application\/json/, `${label} answers JSON`)
    const body = await res.json()
    if (res.status >= 400) t.type(body.message, 'string', `${label} error has a message`)
    c.check?.(body, res)
  }
  t.equal((await rootSession(a.token)).status, 401, 'revoke-sessions revoked the token')

  const fresh = await signIn(a.email, a.password)
  const out = await appFetch(`${svc.url}/sign-out`, { method: 'POST', headers: { authorization: `Bearer ${fresh.token}` } })
  t.equal(out.status, 200, 'POST /sign-out answers 200')
  t.same(await out.json(), { success: true })
  t.equal((await rootSession(fresh.token!)).status, 401, 'and signs the token out')

  // A plain HTTP client without Fetch Metadata (curl, a device) signs in without an Origin;
  // Node's fetch, which sends Sec-Fetch-Mode like a browser, must name one.
  const curl = await rawPost(`${svc.url}/sign-in/email`, { email: a.email, password: a.password })
  t.equal(curl.status, 200, 'sign-in from a client without Fetch Metadata works without Origin')
  t.type(JSON.parse(curl.body).token, 'string')
  const noOrigin = await rootPost('/sign-in/email', { email: a.email, password: a.password })
  t.equal(noOrigin.status, 403, 'a fetch with Sec-Fetch-Mode but no Origin is refused (CSRF protection)')
  t.equal(noOrigin.body.code, 'MISSING_OR_NULL_ORIGIN')

  const notHere = await appFetch(`${svc.url}/no-such-account-path`)
  t.equal(notHere.status, 404, 'an unknown root path is a 404, unlike every Table C path')
})
