// Password-less sign-in by e-mail through the official Better Auth client: magic links and
// one-time codes (sign-in, password reset, e-mail verification, code check), read from the outbox
// the way a user reads their inbox.
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail, type Client, type CookieJar } from '../helpers/client.js'
import { countMail, waitForMail } from '../helpers/outbox.js'
import type { Mail } from '../../src/mail/mailer.js'
import { appFetch } from '../helpers/app-fetch.js'

const PASSWORD = 'correct-horse-battery'
const SESSION_COOKIE = 'better-auth.session_token'

let svc: TestApp

t.before(async () => {
  svc = await startApp(t)
})

type Person = { email: string; client: Client; jar: CookieJar; token: string; userId: string }
type RootSession = { session: Record<string, unknown>; user: Record<string, unknown> }

async function person(prefix: string): Promise<Person> {
  const { client, jar } = makeClient(svc.url)
  const email = uniqueEmail(prefix)
  const { token, userId } = await signUp(client, email, PASSWORD)
  return { email, client, jar, token, userId }
}

/** A signed-up account whose address has been proven through the sign-up verification link. */
async function verifiedPerson(prefix: string): Promise<Person> {
  const p = await person(prefix)
  const mail = await waitForMail(svc.dataDir, p.email, 'verify-email')
  const res = await appFetch(mail.link!, { redirect: 'manual' })
  if (res.status !== 302) throw new Error(`verification link answered ${res.status}`)
  return p
}

async function rootSession(headers: Record<string, string>): Promise<{ status: number; body: RootSession }> {
  const res = await appFetch(`${svc.url}/get-session`, { headers })
  return { status: res.status, body: (await res.json()) as RootSession }
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

async function passwordSignIn(email: string, password: string) {
  return makeClient(svc.url).client.signIn.email({ email, password })
}

/** The session cookie (name=value) a response sets, if any. */
function sessionCookie(res: Response): string | undefined {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';')
    if (pair!.startsWith(`${SESSION_COOKIE}=`) && pair!.length > SESSION_COOKIE.length + 1) return pair
  }
  return undefined
}

/** Runs `action` and returns the mail of `kind` to `to` that it caused. */
async function mailFrom(to: string, kind: Mail['kind'], action: () => Promise<unknown>): Promise<Mail> {
  const before = await countMail(svc.dataDir, to, kind)
  await action()
  return waitForMail(svc.dataDir, to, kind, { after: before })
}

/** Asks for a one-time code of `type` and returns it from the mail. */
async function otpFor(email: string, type: 'sign-in' | 'email-verification' | 'forget-password'): Promise<string> {
  const { client } = makeClient(svc.url)
  const mail = await mailFrom(email, 'otp', async () => {
    const res = await client.emailOtp.sendVerificationOtp({ email, type })
    if (res.error) throw new Error(`send-verification-otp failed: ${res.error.message}`)
  })
  return mail.code!
}

t.test('magic link signs an existing account in; the link works once', async (t) => {
  const p = await verifiedPerson('magic')
  const { client } = makeClient(svc.url)
  const mail = await mailFrom(p.email, 'magic-link', async () => {
    const res = await client.signIn.magicLink({ email: p.email, callbackURL: '/dashboard' })
    t.same(res.data, { status: true }, 'sign-in/magic-link')
  })
  t.equal(mail.subject, 'Your sign-in link')
  const link = new URL(mail.link!)
  t.equal(link.origin, svc.url)
  t.equal(link.pathname, '/api/auth/magic-link/verify')
  t.match(link.searchParams.get('token'), /^[A-Za-z]{32}$/)
  t.equal(link.searchParams.get('callbackURL'), '/dashboard')

  const opened = await appFetch(mail.link!, { redirect: 'manual' })
  t.equal(opened.status, 302, 'the link redirects')
  t.equal(opened.headers.get('location'), `${svc.url}/dashboard`, 'to the callback page')
  const cookie = sessionCookie(opened)
  t.ok(cookie, 'and sets a session cookie')
  const token = opened.headers.get('set-auth-token')
  t.type(token, 'string', 'the bearer token is exposed too')

  const byCookie = await rootSession({ cookie: cookie! })
  t.equal(byCookie.status, 200, 'the cookie is a live session')
  t.equal(byCookie.body.user.email, p.email)
  t.equal(byCookie.body.user.id, p.userId, 'of the existing account')
  const byToken = await rootSession(bearer(token!))
  t.equal(byToken.status, 200, 'the token works as a Bearer token')
  t.equal(byToken.body.session.user_id, p.userId)
  t.equal((await rootSession(bearer(p.token))).status, 200, 'earlier sessions of a verified account are kept')
  t.equal((await passwordSignIn(p.email, PASSWORD)).error, null, 'and so is its password')

  const again = await appFetch(mail.link!, { redirect: 'manual' })
  t.equal(again.status, 302, 'a second use redirects')
  t.equal(again.headers.get('location'), `${svc.url}/dashboard?error=INVALID_TOKEN`, 'with an error')
  t.equal(sessionCookie(again), undefined, 'and signs nobody in')
  t.equal(again.headers.get('set-auth-token'), null)

  const forged = await appFetch(`${svc.url}/api/auth/magic-link/verify?token=${'x'.repeat(32)}&callbackURL=%2Fdashboard`, {
    redirect: 'manual',
  })
  t.equal(forged.headers.get('location'), `${svc.url}/dashboard?error=INVALID_TOKEN`, 'a made-up token is refused')
  t.equal(sessionCookie(forged), undefined)
})

t.test('magic link verified through the client answers with the session', async (t) => {
  const p = await verifiedPerson('magic-client')
  const { client, jar } = makeClient(svc.url)
  const mail = await mailFrom(p.email, 'magic-link', () => client.signIn.magicLink({ email: p.email }))
  t.equal(new URL(mail.link!).searchParams.get('callbackURL'), '/', 'the default callback is the start page')
  const token = new URL(mail.link!).searchParams.get('token')!

  const verified = await client.magicLink.verify({ query: { token } })
  t.equal(verified.error, null, 'magic-link/verify without a callback answers JSON')
  t.equal(verified.data!.user.email, p.email)
  t.type(verified.data!.token, 'string')
  t.ok(jar.size > 0, 'the client received the session cookie')
  const mine = await client.getSession()
  t.equal(mine.data!.user.id, p.userId, 'the client is signed in')
  t.equal(mine.data!.session.token, verified.data!.token)

  const other = makeClient(svc.url)
  const reused = await other.client.magicLink.verify({ query: { token } })
  t.equal(reused.error?.status, 302, 'reusing the token only redirects (to the error callback)')
  t.equal(reused.data, null)
  t.equal((await other.client.getSession()).data, null, 'and signs nobody in')
})

t.test('magic link for a new address creates the account', async (t) => {
  const email = uniqueEmail('magic-new')
  const { client } = makeClient(svc.url)
  const mail = await mailFrom(email, 'magic-link', async () => {
    const res = await client.signIn.magicLink({ email, name: 'Newcomer', callbackURL: '/dashboard', newUserCallbackURL: '/welcome' })
    t.same(res.data, { status: true })
  })
  t.equal(mail.to, email, 'the link goes to the new address')
  const opened = await appFetch(mail.link!, { redirect: 'manual' })
  t.equal(opened.status, 302)
  t.equal(opened.headers.get('location'), `${svc.url}/welcome`, 'a new user lands on the welcome page')
  const token = opened.headers.get('set-auth-token')!
  const root = await rootSession(bearer(token))
  t.equal(root.status, 200, 'the new account is signed in')
  t.equal(root.body.user.email, email)
  t.equal(root.body.user.name, 'Newcomer', 'with the name given')
  t.equal(root.body.user.email_verified, true, 'the link proved the address')
  t.equal(root.body.user.role, 'user')

  // The next link for the same address signs the same account in and is no longer "new".
  const second = await mailFrom(email, 'magic-link', () =>
    client.signIn.magicLink({ email, callbackURL: '/dashboard', newUserCallbackURL: '/welcome' }),
  )
  const back = await appFetch(second.link!, { redirect: 'manual' })
  t.equal(back.headers.get('location'), `${svc.url}/dashboard`, 'a returning user lands on the callback page')
  const again = await rootSession(bearer(back.headers.get('set-auth-token')!))
  t.equal(again.body.user.id, root.body.user.id, 'the same account')
})

t.test('magic link to an unverified account takes over only what the mailbox owner proves', async (t) => {
  // Better Auth strips access that predates the proof of the address: the password set at sign-up
  // and the sessions made with it, so whoever registered someone else's address loses them.
  const p = await person('magic-unverified')
  const { client } = makeClient(svc.url)
  const mail = await mailFrom(p.email, 'magic-link', () => client.signIn.magicLink({ email: p.email, callbackURL: '/' }))
  const opened = await appFetch(mail.link!, { redirect: 'manual' })
  t.equal(opened.status, 302)
  const token = opened.headers.get('set-auth-token')!
  const root = await rootSession(bearer(token))
  t.equal(root.status, 200, 'the mailbox owner is signed in')
  t.equal(root.body.user.id, p.userId, 'to the existing account')
  t.equal(root.body.user.email_verified, true, 'now verified')
  t.equal((await rootSession(bearer(p.token))).status, 401, 'the session made before the proof is revoked')
  const pw = await passwordSignIn(p.email, PASSWORD)
  t.equal(pw.error?.status, 401, 'the unproven password no longer signs in')
})

t.test('e-mail OTP sign-in', async (t) => {
  const p = await verifiedPerson('otp')
  const { client, jar } = makeClient(svc.url)
  const mail = await mailFrom(p.email, 'otp', async () => {
    const res = await client.emailOtp.sendVerificationOtp({ email: p.email, type: 'sign-in' })
    t.same(res.data, { success: true }, 'send-verification-otp')
  })
  t.match(mail.code, /^\d{6}$/, 'a six-digit code is mailed')
  t.equal(mail.subject, `Your code: ${mail.code}`)
  t.match(mail.text, /sign-in code/)

  const signedIn = await client.signIn.emailOtp({ email: p.email, otp: mail.code! })
  t.equal(signedIn.error, null, 'sign-in/email-otp with the code')
  t.equal(signedIn.data!.user.id, p.userId)
  t.type(signedIn.data!.token, 'string')
  t.ok(jar.size > 0, 'the client holds the session cookie')
  t.equal((await client.getSession()).data!.user.email, p.email, 'client get-session shows the user')
  const root = await rootSession(bearer(signedIn.data!.token))
  t.equal(root.status, 200, 'the token works on root /get-session')
  t.equal(root.body.user.email, p.email)

  const reused = await makeClient(svc.url).client.signIn.emailOtp({ email: p.email, otp: mail.code! })
  t.equal(reused.error?.status, 400, 'a used code is refused')
  t.equal(reused.error?.code, 'INVALID_OTP')
  t.type(reused.error?.message, 'string')

  const upper = await otpFor(p.email, 'sign-in')
  const mixedCase = await makeClient(svc.url).client.signIn.emailOtp({ email: p.email.toUpperCase(), otp: upper })
  t.equal(mixedCase.error, null, 'the address is matched case-insensitively')
  t.equal(mixedCase.data!.user.id, p.userId)
})

t.test('e-mail OTP: wrong codes are refused and after three attempts the code is dead', async (t) => {
  const p = await verifiedPerson('otp-wrong')
  const anon = makeClient(svc.url).client

  const code = await otpFor(p.email, 'sign-in')
  const wrong = code === '000000' ? '111111' : '000000'
  for (let i = 1; i <= 2; i++) {
    const res = await anon.signIn.emailOtp({ email: p.email, otp: wrong })
    t.equal(res.error?.status, 400, `wrong code ${i} is refused`)
    t.equal(res.error?.code, 'INVALID_OTP')
  }
  const third = await anon.signIn.emailOtp({ email: p.email, otp: code })
  t.equal(third.error, null, 'the right code still works within the allowed attempts')
  t.equal(third.data!.user.id, p.userId)

  const dead = await otpFor(p.email, 'sign-in')
  const wrong2 = dead === '000000' ? '111111' : '000000'
  for (let i = 1; i <= 3; i++) {
    const res = await anon.signIn.emailOtp({ email: p.email, otp: wrong2 })
    t.equal(res.error?.status, 400, `wrong code ${i} of 3 is refused`)
    t.equal(res.error?.code, 'INVALID_OTP')
  }
  const locked = await anon.signIn.emailOtp({ email: p.email, otp: dead })
  t.equal(locked.error?.status, 403, 'after three wrong attempts even the right code is refused')
  t.equal(locked.error?.code, 'TOO_MANY_ATTEMPTS')
  t.type(locked.error?.message, 'string')
  const stillDead = await anon.signIn.emailOtp({ email: p.email, otp: dead })
  t.equal(stillDead.error?.status, 400, 'the code stays dead')
  t.equal(stillDead.error?.code, 'INVALID_OTP')

  const fresh = await otpFor(p.email, 'sign-in')
  const ok = await anon.signIn.emailOtp({ email: p.email, otp: fresh })
  t.equal(ok.error, null, 'a newly requested code works')
})

t.test('e-mail OTP sign-in for a new address creates the account', async (t) => {
  const email = uniqueEmail('otp-new')
  const code = await otpFor(email, 'sign-in')
  const { client } = makeClient(svc.url)
  const res = await client.signIn.emailOtp({ email, otp: code, name: 'Code Person' })
  t.equal(res.error, null, 'sign-in with the code creates the account')
  t.equal(res.data!.user.email, email)
  const root = await rootSession(bearer(res.data!.token))
  t.equal(root.status, 200)
  t.equal(root.body.user.name, 'Code Person')
  t.equal(root.body.user.email_verified, true, 'the code proved the address')
})

t.test('OTP password reset (forget-password/email-otp and email-otp/request-password-reset)', async (t) => {
  const p = await person('otp-reset')
  const anon = makeClient(svc.url).client

  const nobody = uniqueEmail('otp-reset-nobody')
  const quiet = await anon.forgetPassword.emailOtp({ email: nobody })
  t.same(quiet.data, { success: true }, 'an unknown address gets the same answer')
  t.equal(await countMail(svc.dataDir, nobody, 'otp'), 0, 'and no mail')

  const mail = await mailFrom(p.email, 'otp', async () => {
    const res = await anon.forgetPassword.emailOtp({ email: p.email })
    t.same(res.data, { success: true }, 'forget-password/email-otp')
  })
  t.match(mail.text, /forget-password code/)
  const code = mail.code!

  const checked = await anon.emailOtp.checkVerificationOtp({ email: p.email, type: 'forget-password', otp: code })
  t.same(checked.data, { success: true }, 'check-verification-otp confirms the code without using it')

  const wrong = await anon.emailOtp.resetPassword({
    email: p.email,
    otp: code === '000000' ? '111111' : '000000',
    password: 'otp-reset-new-1',
  })
  t.equal(wrong.error?.status, 400, 'a wrong code does not reset')
  t.equal(wrong.error?.code, 'INVALID_OTP')
  const short = await anon.emailOtp.resetPassword({ email: p.email, otp: code, password: 'short' })
  t.equal(short.error?.status, 400, 'a too short password is refused')
  t.equal(short.error?.code, 'PASSWORD_TOO_SHORT')

  const reset = await anon.emailOtp.resetPassword({ email: p.email, otp: code, password: 'otp-reset-new-1' })
  t.equal(reset.error, null, 'email-otp/reset-password with the code')
  t.same(reset.data, { success: true })
  t.equal((await passwordSignIn(p.email, PASSWORD)).error?.status, 401, 'the old password stops working')
  t.equal((await passwordSignIn(p.email, 'otp-reset-new-1')).error, null, 'the new password works')
  t.equal((await rootSession(bearer(p.token))).status, 401, 'sessions from before the reset are revoked')
  const after = await rootSession(bearer((await passwordSignIn(p.email, 'otp-reset-new-1')).data!.token))
  t.equal(after.body.user.email_verified, true, 'the code also proved the address')

  const reused = await anon.emailOtp.resetPassword({ email: p.email, otp: code, password: 'otp-reset-new-2' })
  t.equal(reused.error?.status, 400, 'the code works only once')
  t.equal(reused.error?.code, 'INVALID_OTP')

  const second = await mailFrom(p.email, 'otp', async () => {
    const res = await anon.emailOtp.requestPasswordReset({ email: p.email })
    t.same(res.data, { success: true }, 'email-otp/request-password-reset')
  })
  const again = await anon.emailOtp.resetPassword({ email: p.email, otp: second.code!, password: 'otp-reset-new-2' })
  t.equal(again.error, null, 'the newer request path resets too')
  t.equal((await passwordSignIn(p.email, 'otp-reset-new-1')).error?.status, 401)
  t.equal((await passwordSignIn(p.email, 'otp-reset-new-2')).error, null, 'the newest password works')
})

t.test('email-otp/verify-email verifies the address', async (t) => {
  const p = await person('otp-verify')
  t.equal((await rootSession(bearer(p.token))).body.user.email_verified, false, 'unverified after sign-up')

  const code = await otpFor(p.email, 'email-verification')
  const wrong = await p.client.emailOtp.verifyEmail({ email: p.email, otp: code === '000000' ? '111111' : '000000' })
  t.equal(wrong.error?.status, 400, 'a wrong code is refused')
  t.equal(wrong.error?.code, 'INVALID_OTP')
  t.equal((await rootSession(bearer(p.token))).body.user.email_verified, false, 'still unverified')

  const ok = await p.client.emailOtp.verifyEmail({ email: p.email, otp: code })
  t.equal(ok.error, null, 'email-otp/verify-email with the code')
  t.equal(ok.data!.status, true)
  t.equal(ok.data!.user.emailVerified, true)
  t.type(ok.data!.token, 'string', 'and a session is started (auto sign-in after verification)')
  const root = await rootSession(bearer(ok.data!.token!))
  t.equal(root.status, 200)
  t.equal(root.body.user.id, p.userId)
  t.equal(root.body.user.email_verified, true, 'root /get-session shows email_verified true')
  // multi-session keeps one session per account per browser: the new one replaces the old one.
  const mine = await p.client.getSession()
  t.equal(mine.data!.session.token, ok.data!.token, 'the client carries on with the new session')
  t.equal(mine.data!.user.emailVerified, true)
  t.equal((await rootSession(bearer(p.token))).status, 401, "the browser's earlier session of the same account is replaced")

  const reused = await p.client.emailOtp.verifyEmail({ email: p.email, otp: code })
  t.equal(reused.error?.status, 400, 'the code works only once')

  const nobody = uniqueEmail('otp-verify-nobody')
  const quiet = await makeClient(svc.url).client.emailOtp.sendVerificationOtp({ email: nobody, type: 'email-verification' })
  t.same(quiet.data, { success: true }, 'an unknown address gets the same answer')
  t.equal(await countMail(svc.dataDir, nobody, 'otp'), 0, 'and no code')
})

t.test('check-verification-otp', async (t) => {
  const p = await verifiedPerson('otp-check')
  const anon = makeClient(svc.url).client

  const code = await otpFor(p.email, 'sign-in')
  const wrong = await anon.emailOtp.checkVerificationOtp({ email: p.email, type: 'sign-in', otp: code === '000000' ? '111111' : '000000' })
  t.equal(wrong.error?.status, 400, 'a wrong code does not check out')
  t.equal(wrong.error?.code, 'INVALID_OTP')
  const ok = await anon.emailOtp.checkVerificationOtp({ email: p.email, type: 'sign-in', otp: code })
  t.same(ok.data, { success: true }, 'the right code checks out')
  const otherType = await anon.emailOtp.checkVerificationOtp({ email: p.email, type: 'email-verification', otp: code })
  t.equal(otherType.error?.status, 400, 'a code is bound to its purpose')
  const signedIn = await anon.signIn.emailOtp({ email: p.email, otp: code })
  t.equal(signedIn.error, null, 'a checked code can still be used once')
  const after = await anon.emailOtp.checkVerificationOtp({ email: p.email, type: 'sign-in', otp: code })
  t.equal(after.error?.status, 400, 'a used code no longer checks out')

  const newcomer = uniqueEmail('otp-check-new')
  const newCode = await otpFor(newcomer, 'sign-in')
  const noAccount = await anon.emailOtp.checkVerificationOtp({ email: newcomer, type: 'sign-in', otp: newCode })
  t.equal(noAccount.error?.status, 400, 'a code for an address without an account does not check out')
  t.equal(noAccount.error?.code, 'USER_NOT_FOUND')
  const invalid = await anon.emailOtp.checkVerificationOtp({ email: 'not-an-email', type: 'sign-in', otp: '123456' })
  t.equal(invalid.error?.status, 400, 'an invalid address is refused')
  t.type(invalid.error?.message, 'string')
})
