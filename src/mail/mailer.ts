// One mailer for every message the service sends. Without SMTP_URL, messages land in
// DATA_DIR/outbox as JSON files and the link or code is logged, so a local developer can
// follow any e-mail flow without a mail server.
import { randomUUID } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Transporter } from 'nodemailer'
import type { FastifyBaseLogger } from 'fastify'

export type MailKind = 'verify-email' | 'reset-password' | 'change-email' | 'delete-account' | 'magic-link' | 'otp' | 'invitation'

export type Mail = {
  kind: MailKind
  to: string
  subject: string
  text: string
  /** The action link the message carries, when it has one. */
  link?: string
  /** The one-time code the message carries, when it has one. */
  code?: string
}

export type Mailer = {
  send(mail: Mail): Promise<void>
  close(): Promise<void>
}

export function createMailer(opts: { smtpUrl?: string; from: string; dataDir: string; log: FastifyBaseLogger }): Mailer {
  // nodemailer is loaded with the first message over SMTP; the outbox needs none of it.
  let transport: Promise<Transporter> | undefined
  const smtp = () => (transport ??= import('nodemailer').then((m) => m.default.createTransport(opts.smtpUrl!)))
  const outbox = join(opts.dataDir, 'outbox')
  return {
    async send(mail) {
      if (opts.smtpUrl) {
        const transport = await smtp()
        await transport.sendMail({
          from: opts.from,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          headers: { 'X-Mail-Kind': mail.kind },
        })
        opts.log.info({ kind: mail.kind, to: mail.to }, 'mail sent over SMTP')
        return
      }
      await mkdir(outbox, { recursive: true })
      const at = new Date()
      const name = `${at.getTime()}-${mail.kind}-${randomUUID().slice(0, 8)}.json`
      await writeFile(join(outbox, name), JSON.stringify({ ...mail, from: opts.from, sentAt: at.toISOString() }, null, 2))
      opts.log.info({ kind: mail.kind, to: mail.to, link: mail.link, code: mail.code, file: name }, 'mail written to outbox')
    },
    async close() {
      if (transport) (await transport).close()
    },
  }
}
