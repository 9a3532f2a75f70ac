// A real SMTP server (smtp-server) on loopback that keeps what it receives, and a small
// RFC 5322 reader (headers unfolded, RFC 2047 words and the body's transfer encoding decoded).
import { SMTPServer } from 'smtp-server'
import { freePort } from './app.js'

type Tap = { teardown(fn: () => unknown): void }

export type ReceivedMail = { mailFrom: string; rcptTo: string[]; raw: string; headers: Map<string, string>; text: string }

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

function parseMessage(raw: string): { headers: Map<string, string>; text: string } {
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

export type SmtpInbox = {
  url: string
  received: ReceivedMail[]
  /** The first message to `to` whose subject matches, among those received after index `after`. */
  waitFor(to: string, subject: RegExp, after?: number, timeoutMs?: number): Promise<ReceivedMail>
}

export async function startSmtp(t: Tap): Promise<SmtpInbox> {
  const received: ReceivedMail[] = []
  const port = await freePort()
  const server = new SMTPServer({
    authOptional: true,
    // Plain SMTP on loopback; the test server has no certificate for STARTTLS.
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw,
          ...parseMessage(raw),
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
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    async waitFor(to, subject, after = 0, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = received.slice(after).find((m) => m.rcptTo.includes(to) && subject.test(m.headers.get('subject') ?? ''))
        if (found) return found
        if (Date.now() > deadline) throw new Error(`no message to ${to} matching ${subject} arrived over SMTP`)
        await new Promise((r) => setTimeout(r, 50))
      }
    },
  }
}
