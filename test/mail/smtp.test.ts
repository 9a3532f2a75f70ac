// With SMTP_URL set, every message goes through SMTP (nodemailer) instead of DATA_DIR/outbox.
// A real SMTP server (smtp-server) on a loopback port receives them; the test reads the raw
// message as a mail client would and follows the link inside it.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { SMTPServer } from 'smtp-server'
import { freePort, startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

type Received = { mailFrom: string; rcptTo: string[]; raw: string }

const MAIL_FROM_ADDRESS = 'pairing@example.test'
const inbox: Received[] = []
let svc: TestApp

t.before(async () => {
  const port = await freePort()
  const server = new SMTPServer({
    authOptional: true,
    // The test server has only a self-signed certificate; plain SMTP on loopback is enough here.
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        inbox.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        })
        callback()
      })
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  svc = await startApp(t, { env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: `Display Pairing <${MAIL_FROM_ADDRESS}>` } })
})

// --- a small RFC 5322 reader: headers (unfolded, RFC 2047 words decoded) and a text body ---

function decodeWords(value: string): string {
  return value.replace(/=\?([^?]+)\?([bq])\?([^?]*)\?=/gi, (_m, _charset: string, enc: string, text: string) =>
    enc.toLowerCase() === 'b'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(
          text.replace(/_/g, ' ').replace(/=([0-9a-f]{2})/gi, (_x, h: string) => String.fromCharCode(parseInt(h, 16))),
          'latin1',
        ).toString('utf8'),
  )
}

function parseMessage(raw: string) {
  const split = raw.indexOf('\r\n\r\n')
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ')
  let body = raw.slice(split + 4)
  const headers = new Map<string, string>()
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':')
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), decodeWords(line.slice(colon + 1).trim()))
  }
  const encoding = (headers.get('content-transfer-encoding') ?? '7bit').toLowerCase()
  if (encoding === 'quoted-printable') {
    body = Buffer.from(
      body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
      'latin1',
    ).toString('utf8')
  } else if (encoding === 'base64') {
    body = Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8')
  }
  return { headers, text: body.replace(/\r\n/g, '\n').trim() }
}

async function waitForMessage(to: string, subject: RegExp, after = 0): Promise<Received & ReturnType<typeof parseMessage>> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const found = inbox
      .slice(after)
      .map((m) => ({ ...m, ...parseMessage(m.raw) }))
      .find((m) => m.rcptTo.includes(to) && subject.test(m.headers.get('subject') ?? ''))
    if (found) return found
    if (Date.now() > deadline) throw new Error(`no message to ${to} matching ${subject} arrived over SMTP`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

t.test('sign-up sends the verification message over SMTP', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('smtp-verify')
  await signUp(client, email)
  const msg = await waitForMessage(email, /verify/i)
  t.same(msg.rcptTo, [email], 'envelope recipient')
  t.equal(msg.mailFrom, MAIL_FROM_ADDRESS, 'envelope sender is MAIL_FROM')
  t.equal(msg.headers.get('to'), email)
  t.match(msg.headers.get('from'), new RegExp(`Display Pairing <${MAIL_FROM_ADDRESS.replace('.', '\\.')}>`))
  t.equal(msg.headers.get('subject'), 'Verify your e-mail address')
  t.equal(msg.headers.get('x-mail-kind'), 'verify-email')
  t.match(msg.headers.get('content-type'), /^text\/plain/)
  const link = msg.text.match(/https?:\/\/\S+/)?.[0]
  t.ok(link, 'the body carries a link')
  const url = new URL(link!)
  t.equal(url.origin, svc.url, 'the link points at the service')
  t.equal(url.pathname, '/api/auth/verify-email')

  // Following it verifies the address.
  const res = await appFetch(url, { redirect: 'manual' })
  t.equal(res.status, 302)
  const session = await client.getSession({ query: { disableCookieCache: true } })
  t.equal(session.data?.user.emailVerified, true, 'the link from the SMTP message verified the account')
})

t.test('a password reset arrives over SMTP and its link works', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('smtp-reset')
  await signUp(client, email, 'old-password-123')
  const before = inbox.length

  const req = await client.requestPasswordReset({ email, redirectTo: '/reset' })
  t.same(req.data?.status, true)
  const msg = await waitForMessage(email, /reset/i, before)
  t.same(msg.rcptTo, [email], 'sent to the account holder only')
  t.equal(msg.headers.get('to'), email)
  t.equal(msg.headers.get('subject'), 'Reset your password')
  t.equal(msg.headers.get('x-mail-kind'), 'reset-password')
  t.match(msg.text, /To choose a new password, open /)
  t.match(msg.text, /If you did not ask for this, ignore this message\./)

  const link = new URL(msg.text.match(/https?:\/\/\S+/)![0])
  t.equal(link.origin, svc.url)
  t.match(link.pathname, /^\/api\/auth\/reset-password\/[^/]+$/)
  const opened = await appFetch(link, { redirect: 'manual' })
  t.equal(opened.status, 302, 'the link opens the reset page')
  const landing = new URL(opened.headers.get('location')!, svc.url)
  t.equal(landing.pathname, '/reset')
  const token = landing.searchParams.get('token')
  t.ok(token, 'the reset page receives the token')
  t.notOk(landing.searchParams.get('error'))

  const reset = await client.resetPassword({ token: token!, newPassword: 'new-password-456' })
  t.equal(reset.error, null)
  t.same(reset.data, { status: true })
  const oldPw = await client.signIn.email({ email, password: 'old-password-123' })
  t.equal(oldPw.error?.status, 401, 'the old password no longer works')
  const newPw = await client.signIn.email({ email, password: 'new-password-456' })
  t.equal(newPw.error, null, 'the new password works')
  t.equal(newPw.data?.user.email, email)
})

t.test('an unknown address gets no message, and the answer does not tell', async (t) => {
  const before = inbox.length
  const { client } = makeClient(svc.url)
  const ghost = uniqueEmail('smtp-ghost')
  const res = await client.requestPasswordReset({ email: ghost, redirectTo: '/reset' })
  t.same(res.data?.status, true, 'same answer as for a real account')
  // A real request afterwards, to know the mailer has caught up.
  const real = uniqueEmail('smtp-after')
  await signUp(makeClient(svc.url).client, real)
  await waitForMessage(real, /verify/i, before)
  t.notOk(
    inbox.slice(before).some((m) => m.rcptTo.includes(ghost)),
    'nothing was sent to the unknown address',
  )
})

t.test('in SMTP mode nothing is written to the outbox folder', async (t) => {
  t.ok(inbox.length >= 3, `${inbox.length} messages went through SMTP`)
  const files = await readdir(join(svc.dataDir, 'outbox')).catch(() => [] as string[])
  t.same(files, [], 'DATA_DIR/outbox is empty')
})
