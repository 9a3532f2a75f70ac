// Reads what the mailer wrote to DATA_DIR/outbox, as a user reads their inbox.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Mail, MailKind } from '../../src/mail/mailer.js'

async function allMail(dataDir: string): Promise<Mail[]> {
  const dir = join(dataDir, 'outbox')
  const names = await readdir(dir).catch(() => [] as string[])
  names.sort()
  return Promise.all(names.map(async (n) => JSON.parse(await readFile(join(dir, n), 'utf8')) as Mail))
}

/** The newest message of a kind to an address, waiting up to `timeoutMs` for it to arrive. */
export async function waitForMail(
  dataDir: string,
  to: string,
  kind: MailKind,
  opts: { after?: number; timeoutMs?: number } = {},
): Promise<Mail> {
  const deadline = Date.now() + (opts.timeoutMs ?? 5000)
  for (;;) {
    const found = (await allMail(dataDir)).filter((m) => m.to === to && m.kind === kind)
    const fresh = found.slice(opts.after ?? 0)
    if (fresh.length) return fresh[fresh.length - 1] as Mail
    if (Date.now() > deadline) throw new Error(`no ${kind} mail to ${to} within ${opts.timeoutMs ?? 5000} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export async function countMail(dataDir: string, to: string, kind: MailKind): Promise<number> {
  return (await allMail(dataDir)).filter((m) => m.to === to && m.kind === kind).length
}
