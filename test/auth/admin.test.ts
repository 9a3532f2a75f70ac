// Administration of users through the official Better Auth client's admin plugin, plus the
// interface's root /get-session and sign-in paths to see what the affected user sees.
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail, type Client } from '../helpers/client.js'
import { waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

const PASSWORD = 'correct-horse-battery'
const BOSS = 'boss@example.com'

type ClientError = { message?: string; code?: string; status: number } | null
type Tap = Pick<typeof t, 'equal' | 'type' | 'ok' | 'match'>

let svc: TestApp
/** The configured admin: a client signed in as them, their id and session token. */
let boss: { client: Client; id: string; token: string }

t.before(async () => {
  // Mixed case in the setting: the address matches whatever case it is written in.
  svc = await startApp(t, { env: { ADMIN_EMAILS: `Boss@Example.com, chief@example.com` } })
})

/** Asserts a client call succeeded and returns its data. */
function ok<T>(t: Tap, res: { data: T | null; error: ClientError }, what: string): T {
  t.equal(res.error, null, `${what} succeeds`)
  if (res.error || res.data == null) throw new Error(`${what} failed: ${JSON.stringify(res.error)}`)
  return res.data
}

/** Asserts a client call failed with this status (and code, when given), carrying a message. */
function refused(t: Tap, res: { error: ClientError }, status: number, code: string | RegExp | undefined, what: string) {
  t.equal(res.error?.status, status, `${what}: status ${status}`)
  t.type(res.error?.message, 'string', `${what}: has a message`)
  t.ok((res.error?.message ?? '').length > 0, `${what}: message is not empty`)
  if (code) t.match(res.error?.code, code, `${what}: code`)
  else t.type(res.error?.code, 'string', `${what}: has a code`)
}

async function rootSession(token: string) {
  const res = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  const body = (await res.json()) as {
    session: { user_id: string; token: string; impersonated_by: string | null }
    user: { id: string; email: string; name: string; role: string; email_verified: boolean; banned: boolean; ban_reason: string | null }
    code?: string
  }
  return { status: res.status, body }
}

async function rootSignIn(email: string, password: string) {
  const res = await appFetch(`${svc.url}/sign-in/email`, {
    method: 'POST',
    // Node's fetch sends Sec-Fetch-Mode, so Better Auth's sign-in CSRF check wants an Origin, as from a browser.
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ email, password }),
  })
  return { status: res.status, body: (await res.json()) as { token?: string; user?: { id: string }; message?: string; code?: string } }
}

/** Follows the link of the newest verification e-mail the way a mail client would open it. */
async function verifyEmail(email: string) {
  const mail = await waitForMail(svc.dataDir, email, 'verify-email')
  t.ok(mail.link, 'verification mail carries a link')
  const res = await appFetch(mail.link!, { redirect: 'manual' })
  return res.status
}

t.test('ADMIN_EMAILS grants the admin role only once the address is verified', async (t) => {
  const { client } = makeClient(svc.url)
  const { token, userId } = await signUp(client, BOSS, PASSWORD, 'The Boss')

  const before = await rootSession(token)
  t.equal(before.status, 200)
  t.equal(before.body.user.email_verified, false)
  t.equal(before.body.user.role, 'user', 'an unverified listed address is a plain user')
  refused(t, await client.admin.listUsers({ query: {} }), 403, 'YOU_ARE_NOT_ALLOWED_TO_LIST_USERS', 'unverified listed address lists users')

  t.equal(await verifyEmail(BOSS), 302, 'the verification link redirects to the callback')

  const after = await rootSession(token)
  t.equal(after.status, 200, 'the sign-up session still works')
  t.equal(after.body.user.email_verified, true)
  t.equal(after.body.user.role, 'admin', 'verified listed address is an admin')
  // The same (pre-verification) session now passes the admin plugin's checks too.
  const list = ok(t, await client.admin.listUsers({ query: {} }), 'admin lists users with the existing session')
  t.ok(list.users.some((u) => u.id === userId))

  // Someone not on the list stays a user after verifying.
  const other = uniqueEmail('plain')
  const o = await signUp(makeClient(svc.url).client, other)
  t.equal(await verifyEmail(other), 302)
  const otherSession = await rootSession(o.token)
  t.equal(otherSession.body.user.email_verified, true)
  t.equal(otherSession.body.user.role, 'user', 'verified unlisted address stays a user')

  boss = { client, id: userId, token }
})

t.test('create-user, get-user, set-role, update-user, list-users', async (t) => {
  const email = uniqueEmail('made')
  const created = ok(t, await boss.client.admin.createUser({ email, password: PASSWORD, name: 'Made By Admin' }), 'create-user')
  t.equal(created.user.email, email)
  t.equal(created.user.name, 'Made By Admin')
  t.equal(created.user.role, 'user', 'default role')
  const madeId = created.user.id

  refused(
    t,
    await boss.client.admin.createUser({ email, password: PASSWORD, name: 'Again' }),
    400,
    'USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL',
    'create-user twice',
  )

  // An admin may choose the role of a user they create.
  const deputyEmail = uniqueEmail('deputy')
  const deputy = ok(
    t,
    await boss.client.admin.createUser({ email: deputyEmail, password: PASSWORD, name: 'Deputy', role: 'admin' }),
    'create-user as admin',
  )
  t.equal(deputy.user.role, 'admin', 'the requested role is kept')

  // The created account signs in with the password the admin chose.
  const signIn = await rootSignIn(email, PASSWORD)
  t.equal(signIn.status, 200, 'created user signs in')
  t.equal(signIn.body.user?.id, madeId)
  const madeSession = await rootSession(signIn.body.token!)
  t.equal(madeSession.body.user.role, 'user')
  const deputySignIn = await rootSignIn(deputyEmail, PASSWORD)
  t.equal((await rootSession(deputySignIn.body.token!)).body.user.role, 'admin', 'deputy is an admin at /get-session')

  const got = ok(t, await boss.client.admin.getUser({ query: { id: madeId } }), 'get-user')
  t.equal(got.id, madeId)
  t.equal(got.email, email)
  refused(t, await boss.client.admin.getUser({ query: { id: 'no-such-user' } }), 404, 'USER_NOT_FOUND', 'get-user of an unknown id')

  const promoted = ok(t, await boss.client.admin.setRole({ userId: madeId, role: 'admin' }), 'set-role admin')
  t.equal(promoted.user.role, 'admin')
  t.equal((await rootSession(signIn.body.token!)).body.user.role, 'admin', 'the user sees the new role')
  refused(
    t,
    await boss.client.admin.setRole({ userId: 'no-such-user', role: 'admin' }),
    404,
    'USER_NOT_FOUND',
    'set-role of an unknown user',
  )
  ok(t, await boss.client.admin.setRole({ userId: madeId, role: 'user' }), 'set-role back to user')
  t.equal(ok(t, await boss.client.admin.getUser({ query: { id: madeId } }), 'get-user').role, 'user')

  const updated = ok(t, await boss.client.admin.updateUser({ userId: madeId, data: { name: 'Renamed By Admin' } }), 'update-user')
  t.equal((updated as { name: string }).name, 'Renamed By Admin')
  t.equal((await rootSession(signIn.body.token!)).body.user.name, 'Renamed By Admin', 'the user sees the new name')
  refused(
    t,
    await boss.client.admin.updateUser({ userId: madeId, data: { password: 'x-new-password' } }),
    400,
    'PASSWORD_CANNOT_BE_UPDATED_VIA_UPDATE_USER',
    'update-user with a password',
  )

  const search = ok(
    t,
    await boss.client.admin.listUsers({ query: { searchValue: 'made-', searchField: 'email', searchOperator: 'contains' } }),
    'list-users search',
  )
  t.same(
    search.users.map((u) => u.id),
    [madeId],
    'search by e-mail finds exactly the created user',
  )
  t.equal(search.total, 1)
  const byName = ok(t, await boss.client.admin.listUsers({ query: { searchValue: 'Deputy', searchField: 'name' } }), 'list-users by name')
  t.same(
    byName.users.map((u) => u.email),
    [deputyEmail],
  )

  const all = ok(t, await boss.client.admin.listUsers({ query: { sortBy: 'createdAt', sortDirection: 'asc' } }), 'list-users all')
  t.ok(all.total >= 4, 'total counts every user')
  const page = ok(
    t,
    await boss.client.admin.listUsers({ query: { limit: 2, sortBy: 'createdAt', sortDirection: 'asc' } }),
    'list-users limit',
  )
  t.equal(page.users.length, 2, 'limit caps the page')
  t.equal((page as { limit?: number }).limit, 2)
  t.equal(page.total, all.total, 'total is the whole count, not the page')
  const next = ok(
    t,
    await boss.client.admin.listUsers({ query: { limit: 2, offset: 2, sortBy: 'createdAt', sortDirection: 'asc' } }),
    'list-users offset',
  )
  t.same(
    next.users.map((u) => u.id),
    all.users.slice(2, 4).map((u) => u.id),
    'offset gives the next page',
  )
})

t.test('sign-up cannot choose a role', async (t) => {
  const email = uniqueEmail('climber')
  const res = await appFetch(`${svc.url}/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ email, password: PASSWORD, name: 'Climber', role: 'admin' }),
  })
  t.ok(res.status >= 400 && res.status < 500, `sign-up with a role is refused (${res.status})`)
  const body = (await res.json()) as { message: string; code: string }
  t.type(body.message, 'string')
  t.type(body.code, 'string')
  const found = ok(t, await boss.client.admin.listUsers({ query: { searchValue: email, searchField: 'email' } }), 'list-users')
  t.same(found.users, [], 'no account was created')
})

t.test('ban-user refuses sign-in and ends sessions; unban-user lets the user back', async (t) => {
  const email = uniqueEmail('banned')
  const victim = makeClient(svc.url)
  const { token, userId } = await signUp(victim.client, email)
  const second = await rootSignIn(email, PASSWORD)
  t.equal(second.status, 200)
  t.equal((await rootSession(token)).status, 200)

  refused(t, await boss.client.admin.banUser({ userId: boss.id }), 400, 'YOU_CANNOT_BAN_YOURSELF', 'admin bans themselves')

  const banned = ok(t, await boss.client.admin.banUser({ userId, banReason: 'spamming' }), 'ban-user')
  t.equal(banned.user.banned, true)
  t.equal(banned.user.banReason, 'spamming')

  for (const tok of [token, second.body.token!]) {
    const s = await rootSession(tok)
    t.equal(s.status, 401, 'an existing session stops working')
    t.equal(s.body.code, 'UNAUTHORIZED')
  }
  const viaClient = await victim.client.getSession()
  t.equal(viaClient.data, null, 'the banned user client has no session')

  const refusedSignIn = await rootSignIn(email, PASSWORD)
  t.equal(refusedSignIn.status, 403, 'sign-in of a banned user is refused')
  t.equal(refusedSignIn.body.code, 'BANNED_USER')
  t.type(refusedSignIn.body.message, 'string')
  t.notOk(refusedSignIn.body.token, 'no token is handed out')
  refused(t, await victim.client.signIn.email({ email, password: PASSWORD }), 403, 'BANNED_USER', 'client sign-in of a banned user')

  const seen = ok(t, await boss.client.admin.getUser({ query: { id: userId } }), 'get-user of banned user')
  t.equal(seen.banned, true)
  t.equal(seen.banReason, 'spamming')

  const unbanned = ok(t, await boss.client.admin.unbanUser({ userId }), 'unban-user')
  t.equal(unbanned.user.banned, false)
  const back = await rootSignIn(email, PASSWORD)
  t.equal(back.status, 200, 'sign-in works again')
  const s = await rootSession(back.body.token!)
  t.equal(s.status, 200)
  t.equal(s.body.user.banned, false)
  t.equal(s.body.user.ban_reason, null)
})

t.test('impersonate-user and stop-impersonating', async (t) => {
  const targetEmail = uniqueEmail('target')
  const target = makeClient(svc.url)
  const { userId: targetId, token: targetToken } = await signUp(target.client, targetEmail)

  // The admin impersonates from a browser of their own.
  const adminBrowser = makeClient(svc.url)
  ok(t, await adminBrowser.client.signIn.email({ email: BOSS, password: PASSWORD }), 'admin signs in')

  const imp = ok(t, await adminBrowser.client.admin.impersonateUser({ userId: targetId }), 'impersonate-user')
  t.equal(imp.user.id, targetId)
  t.equal(imp.session.userId, targetId)
  t.equal((imp.session as { impersonatedBy?: string }).impersonatedBy, boss.id)
  const impToken = imp.session.token

  const root = await rootSession(impToken)
  t.equal(root.status, 200)
  t.equal(root.body.user.id, targetId, 'root /get-session shows the impersonated user')
  t.equal(root.body.session.user_id, targetId)
  t.equal(root.body.session.impersonated_by, boss.id, 'impersonated_by is the admin id')
  t.equal((await rootSession(targetToken)).body.session.impersonated_by, null, "the user's own session is not impersonated")

  const asTarget = ok(t, await adminBrowser.client.getSession(), 'get-session while impersonating')
  t.equal(asTarget.user.id, targetId, "the admin's browser now acts as the user")

  // The user's own session list does not reveal the impersonation session.
  const own = ok(t, await target.client.listSessions(), 'target lists own sessions')
  t.notOk(
    own.some((s) => s.token === impToken),
    'impersonation session is hidden from the user',
  )
  t.ok(own.some((s) => s.token === targetToken))

  const deputyId = ok(t, await boss.client.admin.listUsers({ query: { searchValue: 'Deputy', searchField: 'name' } }), 'find deputy')
    .users[0]!.id
  refused(
    t,
    await boss.client.admin.impersonateUser({ userId: deputyId }),
    403,
    'YOU_CANNOT_IMPERSONATE_ADMINS',
    'impersonating another admin',
  )

  const stopped = ok(t, await adminBrowser.client.admin.stopImpersonating(), 'stop-impersonating')
  t.equal(stopped.user.id, boss.id, 'back to the admin')
  const again = ok(t, await adminBrowser.client.getSession(), 'get-session after stopping')
  t.equal(again.user.id, boss.id)
  t.equal((await rootSession(impToken)).status, 401, 'the impersonation session is gone')

  refused(t, await adminBrowser.client.admin.stopImpersonating(), 400, undefined, 'stop-impersonating when not impersonating')
})

t.test('list-user-sessions, revoke-user-session and revoke-user-sessions', async (t) => {
  const email = uniqueEmail('sessions')
  const { token: t1, userId } = await signUp(makeClient(svc.url).client, email)
  const t2 = (await rootSignIn(email, PASSWORD)).body.token!

  const listed = ok(t, await boss.client.admin.listUserSessions({ userId }), 'list-user-sessions')
  t.same(listed.sessions.map((s) => s.token).sort(), [t1, t2].sort(), 'both sessions are listed')
  t.ok(listed.sessions.every((s) => s.userId === userId))

  t.same(ok(t, await boss.client.admin.revokeUserSession({ sessionToken: t1 }), 'revoke-user-session'), { success: true })
  t.equal((await rootSession(t1)).status, 401, 'revoked session stops working')
  t.equal((await rootSession(t2)).status, 200, 'the other session still works')
  const afterOne = ok(t, await boss.client.admin.listUserSessions({ userId }), 'list-user-sessions')
  t.same(
    afterOne.sessions.map((s) => s.token),
    [t2],
  )

  const t3 = (await rootSignIn(email, PASSWORD)).body.token!
  t.same(ok(t, await boss.client.admin.revokeUserSessions({ userId }), 'revoke-user-sessions'), { success: true })
  t.equal((await rootSession(t2)).status, 401)
  t.equal((await rootSession(t3)).status, 401)
  t.same(ok(t, await boss.client.admin.listUserSessions({ userId }), 'list-user-sessions').sessions, [], 'no sessions left')
  t.equal((await rootSession(boss.token)).status, 200, "the admin's own session is untouched")
})

t.test('set-user-password', async (t) => {
  const email = uniqueEmail('pw')
  const { userId } = await signUp(makeClient(svc.url).client, email)
  const newPassword = 'a-brand-new-password'

  refused(
    t,
    await boss.client.admin.setUserPassword({ userId, newPassword: 'short' }),
    400,
    'PASSWORD_TOO_SHORT',
    'set-user-password too short',
  )
  t.same(ok(t, await boss.client.admin.setUserPassword({ userId, newPassword }), 'set-user-password'), { status: true })

  const withNew = await rootSignIn(email, newPassword)
  t.equal(withNew.status, 200, 'the new password signs in')
  t.equal(withNew.body.user?.id, userId)
  const withOld = await rootSignIn(email, PASSWORD)
  t.equal(withOld.status, 401, 'the old password no longer works')
  t.equal(withOld.body.code, 'INVALID_EMAIL_OR_PASSWORD')
})

t.test('remove-user', async (t) => {
  const email = uniqueEmail('removed')
  const { token, userId } = await signUp(makeClient(svc.url).client, email)

  refused(t, await boss.client.admin.removeUser({ userId: boss.id }), 400, 'YOU_CANNOT_REMOVE_YOURSELF', 'admin removes themselves')
  t.same(ok(t, await boss.client.admin.removeUser({ userId }), 'remove-user'), { success: true })

  t.equal((await rootSession(token)).status, 401, "the removed user's session is gone")
  refused(t, await boss.client.admin.getUser({ query: { id: userId } }), 404, 'USER_NOT_FOUND', 'get-user of a removed user')
  const signIn = await rootSignIn(email, PASSWORD)
  t.equal(signIn.status, 401, 'the removed user cannot sign in')
  refused(t, await boss.client.admin.removeUser({ userId }), 404, 'USER_NOT_FOUND', 'removing twice')
})

t.test('has-permission: admin yes, plain user no', async (t) => {
  const plain = makeClient(svc.url)
  await signUp(plain.client, uniqueEmail('perm'))

  for (const permissions of [{ user: ['ban'] }, { user: ['create', 'delete'] }, { session: ['revoke'] }] as const) {
    const a = ok(
      t,
      await boss.client.admin.hasPermission({ permissions: permissions as unknown as { user: ['ban'] } }),
      `admin ${JSON.stringify(permissions)}`,
    )
    t.equal(a.success, true, `admin has ${JSON.stringify(permissions)}`)
    const p = ok(
      t,
      await plain.client.admin.hasPermission({ permissions: permissions as unknown as { user: ['ban'] } }),
      `user ${JSON.stringify(permissions)}`,
    )
    t.equal(p.success, false, `plain user lacks ${JSON.stringify(permissions)}`)
  }
  // The admin role does not include impersonating other admins.
  const adminImp = ok(
    t,
    await boss.client.admin.hasPermission({ permissions: { user: ['impersonate-admins'] } }),
    'admin impersonate-admins',
  )
  t.equal(adminImp.success, false)

  const anon = await appFetch(`${svc.url}/api/auth/admin/has-permission`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ permissions: { user: ['ban'] } }),
  })
  t.equal(anon.status, 401, 'without a session: 401')
  const body = (await anon.json()) as { message: string; code: string }
  t.type(body.message, 'string')
  t.type(body.code, 'string')
})

t.test('a plain user calling admin endpoints gets 403 {message, code}', async (t) => {
  const plainEmail = uniqueEmail('nosy')
  const { token } = await signUp(makeClient(svc.url).client, plainEmail)
  const victimEmail = uniqueEmail('innocent')
  const victim = await signUp(makeClient(svc.url).client, victimEmail)
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

  const calls: Array<[string, string, unknown?]> = [
    ['GET', '/admin/list-users'],
    ['GET', `/admin/get-user?id=${victim.userId}`],
    ['POST', '/admin/set-role', { userId: victim.userId, role: 'admin' }],
    ['POST', '/admin/create-user', { email: uniqueEmail('sneaky'), password: PASSWORD, name: 'Sneaky' }],
    ['POST', '/admin/update-user', { userId: victim.userId, data: { name: 'Hacked' } }],
    ['POST', '/admin/ban-user', { userId: victim.userId }],
    ['POST', '/admin/unban-user', { userId: victim.userId }],
    ['POST', '/admin/impersonate-user', { userId: victim.userId }],
    ['POST', '/admin/list-user-sessions', { userId: victim.userId }],
    ['POST', '/admin/revoke-user-session', { sessionToken: victim.token }],
    ['POST', '/admin/revoke-user-sessions', { userId: victim.userId }],
    ['POST', '/admin/set-user-password', { userId: victim.userId, newPassword: 'taken-over-pass' }],
    ['POST', '/admin/remove-user', { userId: victim.userId }],
  ]
  for (const [method, path, body] of calls) {
    const res = await appFetch(`${svc.url}/api/auth${path}`, { method, headers: auth, body: body ? JSON.stringify(body) : undefined })
    t.equal(res.status, 403, `${method} ${path}: 403`)
    t.match(res.headers.get('content-type'), /application\/json/)
    const err = (await res.json()) as { message: string; code: string }
    t.type(err.message, 'string', `${path}: message`)
    t.match(err.code, /^YOU_ARE_NOT_ALLOWED_TO_/, `${path}: code`)
  }

  // Through the official client as well.
  const nosy = makeClient(svc.url)
  ok(t, await nosy.client.signIn.email({ email: plainEmail, password: PASSWORD }), 'plain user signs in')
  refused(t, await nosy.client.admin.listUsers({ query: {} }), 403, 'YOU_ARE_NOT_ALLOWED_TO_LIST_USERS', 'client list-users')
  refused(t, await nosy.client.admin.banUser({ userId: victim.userId }), 403, 'YOU_ARE_NOT_ALLOWED_TO_BAN_USERS', 'client ban-user')

  // Nothing happened to the victim.
  const s = await rootSession(victim.token)
  t.equal(s.status, 200, "the victim's session survived")
  t.equal(s.body.user.name, 'Test User')
  t.equal(s.body.user.role, 'user')
  t.equal(s.body.user.banned, false)
  t.equal((await rootSignIn(victimEmail, PASSWORD)).status, 200, 'the victim keeps their password')
  t.equal((await rootSession(token)).body.user.role, 'user', 'the plain user is still a plain user')

  // Without any session the admin endpoints are 401.
  const anon = await appFetch(`${svc.url}/api/auth/admin/list-users`)
  t.equal(anon.status, 401)
  t.type(((await anon.json()) as { message: string }).message, 'string')
})
