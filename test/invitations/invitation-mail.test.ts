// Organization invitations end to end over SMTP: the invitation mail arrives at a real SMTP
// server (smtp-server on loopback, SMTP_URL) with a link to the console's page for it (its
// journey is in test/web/console.test.ts); the same without JavaScript, /accept-invitation/:id,
// lets the invitee sign in and accept (POST /api/invitations/accept). Only the verified
// recipient may accept.
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { CookieJar, makeClient, signUp, uniqueEmail, type Client } from '../helpers/client.js'
import { startSmtp, type ReceivedMail, type SmtpInbox } from '../helpers/smtp.js'
import { appFetch } from '../helpers/app-fetch.js'

type Person = { client: Client; jar: CookieJar; token: string; id: string; email: string }

let svc: TestApp
let smtp: SmtpInbox
let owner: Person
let org: { id: string; name: string }

t.before(async () => {
  smtp = await startSmtp(t)
  svc = await startApp(t, { env: { SMTP_URL: smtp.url, MAIL_FROM: 'Display Pairing <pairing@example.test>' } })
  owner = await person('inv-owner')
  // A name with markup: the page must show it as text.
  const created = await owner.client.organization.create({ name: 'Frames <b>& Co</b>', slug: `frames-${Date.now().toString(36)}` })
  if (created.error) throw new Error(created.error.message)
  org = { id: created.data!.id, name: created.data!.name }
})

async function person(prefix: string, email = uniqueEmail(prefix)): Promise<Person> {
  const { client, jar } = makeClient(svc.url)
  const { token, userId } = await signUp(client, email)
  return { client, jar, token, id: userId, email }
}

/** The invitation, the e-mail's link (the console's page) and the page that works without JavaScript. */
async function invite(
  email: string,
  role: 'member' | 'admin' = 'member',
): Promise<{ id: string; link: string; page: string; mail: ReceivedMail }> {
  const after = smtp.received.length
  const res = await owner.client.organization.inviteMember({ email, role, organizationId: org.id })
  if (res.error) throw new Error(res.error.message)
  const mail = await smtp.waitFor(email, /invited/i, after)
  const link = mail.text.match(/https?:\/\/\S+/)![0]
  const id = new URL(link).pathname.split('/').pop()!
  return { id, link, page: `${svc.url}/accept-invitation/${id}`, mail }
}

async function page(link: string, jar?: CookieJar) {
  const res = await appFetch(link, { headers: jar?.size ? { cookie: jar.header() } : {} })
  return { status: res.status, type: res.headers.get('content-type'), html: await res.text() }
}

async function accept(invitationId: string, auth: { token?: string; jar?: CookieJar; origin?: string }) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (auth.token) headers.authorization = `Bearer ${auth.token}`
  if (auth.jar) headers.cookie = auth.jar.header()
  if (auth.origin) headers.origin = auth.origin
  const res = await appFetch(`${svc.url}/api/invitations/accept`, { method: 'POST', headers, body: JSON.stringify({ invitationId }) })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { code?: string; message?: string } }
}

/** Follows the newest verification link mailed to the person, as they would from their inbox. */
async function verifyByMail(p: Person) {
  const mail = await smtp.waitFor(p.email, /verify/i)
  const res = await appFetch(mail.text.match(/https?:\/\/\S+/)![0], { redirect: 'manual', headers: { cookie: p.jar.header() } })
  p.jar.store(res)
}

t.test('the invitation mail arrives over SMTP and its link accepts the invitation', async (t) => {
  const ivy = await person('inv-ivy')
  const inv = await invite(ivy.email)
  t.same(inv.mail.rcptTo, [ivy.email], 'sent to the invitee')
  t.equal(inv.mail.mailFrom, 'pairing@example.test')
  t.equal(inv.mail.headers.get('x-mail-kind'), 'invitation')
  t.match(inv.mail.headers.get('subject'), /You are invited to Frames <b>& Co<\/b>/)
  t.equal(inv.link, `${svc.url}/invitations/${inv.id}`, "the link is the console's BASE_URL/invitations/<id>")

  // Opened without a session: the page offers to sign in as the invited address.
  const anon = await page(inv.page)
  t.equal(anon.status, 200)
  t.match(anon.type, /^text\/html/)
  t.match(anon.html, 'Frames &#60;b&#62;&#38; Co&#60;/b&#62;', 'the organization name is escaped')
  t.notMatch(anon.html, '<b>& Co</b>', 'never raw markup')
  t.match(anon.html, ivy.email)
  t.match(anon.html, /E-mail me a sign-in link/)
  t.match(anon.html, /sign in with your password/i)

  // Signed in (cookie) but the address is not verified yet: the page says so and the API refuses.
  t.match((await page(inv.page, ivy.jar)).html, /not verified/)
  const unverified = await accept(inv.id, { token: ivy.token })
  t.equal(unverified.status, 403)
  t.equal(unverified.body.code, 'EMAIL_NOT_VERIFIED')

  await verifyByMail(ivy)
  const ready = await page(inv.page, ivy.jar)
  t.equal(ready.status, 200)
  t.match(ready.html, /id="accept"/, 'the verified recipient gets the Accept button')
  t.match(ready.html, `Signed in as ${ivy.email}`)

  // What the Accept button does: POST with the session cookie from the service's own page.
  const ok = await accept(inv.id, { jar: ivy.jar, origin: svc.url })
  t.equal(ok.status, 200)
  t.match(ok.body, {
    success: true,
    organization: { id: org.id, name: org.name },
    member: { organizationId: org.id, userId: ivy.id, role: 'member' },
  })
  const members = await owner.client.organization.listMembers({ query: { organizationId: org.id } })
  t.ok(
    members.data?.members.some((m) => m.userId === ivy.id && m.role === 'member'),
    'ivy is a member',
  )

  const twice = await accept(inv.id, { token: ivy.token })
  t.equal(twice.status, 409)
  t.equal(twice.body.code, 'INVITATION_NOT_PENDING')
  const after = await page(inv.page, ivy.jar)
  t.equal(after.status, 409)
  t.match(after.html, /already been accepted/)
})

t.test('only the invited, verified address may accept', async (t) => {
  const target = uniqueEmail('inv-target')
  const inv = await invite(target, 'admin')
  const mallory = await person('inv-mallory')
  await verifyByMail(mallory)
  const wrong = await accept(inv.id, { token: mallory.token })
  t.equal(wrong.status, 403)
  t.equal(wrong.body.code, 'NOT_INVITATION_RECIPIENT')
  t.match((await page(inv.page, mallory.jar)).html, /but the invitation is for/)
  t.equal((await accept(inv.id, {})).status, 401, 'no session')
  const cross = await accept(inv.id, { jar: mallory.jar, origin: 'https://evil.example' })
  t.equal(cross.status, 403, 'a cookie-carrying request from another site is refused')
  t.equal(cross.body.code, 'FORBIDDEN_ORIGIN')
  const unknown = await accept('no-such-invitation', { token: mallory.token })
  t.equal(unknown.status, 404)
  t.equal((await page(`${svc.url}/accept-invitation/no-such-invitation`)).status, 404)
  t.equal((await accept('../../x', { token: mallory.token })).status, 400, 'ids are validated')
})

t.test('a newcomer signs in from the page by e-mailed link and accepts', async (t) => {
  const email = uniqueEmail('inv-newcomer')
  const inv = await invite(email, 'admin')
  // What the page's "E-mail me a sign-in link" button sends.
  const before = smtp.received.length
  const jar = new CookieJar()
  const sent = await appFetch(`${svc.url}/api/auth/sign-in/magic-link`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ email, callbackURL: `/accept-invitation/${inv.id}` }),
  })
  t.equal(sent.status, 200)
  const mail = await smtp.waitFor(email, /sign-in link/i, before)
  const opened = await appFetch(mail.text.match(/https?:\/\/\S+/)![0], { redirect: 'manual' })
  jar.store(opened)
  t.equal(opened.status, 302)
  t.equal(
    new URL(opened.headers.get('location')!, svc.url).pathname,
    `/accept-invitation/${inv.id}`,
    'the link leads back to the invitation',
  )
  const back = await page(inv.page, jar)
  t.match(back.html, /id="accept"/, 'signed in, verified by the link, ready to accept')
  const ok = await accept(inv.id, { jar, origin: svc.url })
  t.equal(ok.status, 200)
  t.match(ok.body, { member: { role: 'admin', organizationId: org.id } })
})
