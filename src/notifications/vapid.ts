// The VAPID key pair the service signs push requests with: from VAPID_* when configured,
// otherwise generated on first start and kept in the database, so every instance and every
// restart uses the same pair (browsers bind their subscriptions to the public key). The private
// key is stored encrypted with a key derived from AUTH_SECRET, so a database dump alone cannot
// sign pushes.
import { createCipheriv, createDecipheriv, createECDH, hkdfSync, randomBytes } from 'node:crypto'
import { ConfigError } from '../config.js'
import type { Database } from '../db/client.js'
import { insertSettingOnce } from '../settings/repository.js'

export type VapidKeys = { publicKey: string; privateKey: string; subject: string }

const SETTING_KEY = 'vapid.keys'

function sealingKey(authSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', authSecret, 'dps-vapid', 'vapid private key sealing', 32))
}

function sealPrivateKey(authSecret: string, privateKey: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', sealingKey(authSecret), iv)
  const body = Buffer.concat([cipher.update(privateKey, 'utf8'), cipher.final()])
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.')
}

function openPrivateKey(authSecret: string, sealed: string): string {
  const [iv, tag, body] = sealed.split('.').map((s) => Buffer.from(s, 'base64url'))
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(authSecret), iv!)
  decipher.setAuthTag(tag!)
  return Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8')
}

/**
 * A P-256 pair in the encoding web-push and browsers use: the uncompressed public point and the
 * 32-byte private scalar, base64url (web-push itself is loaded only when the first push goes out).
 */
export function generateVapidKeys(): { publicKey: string; privateKey: string } {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  const scalar = Buffer.alloc(32)
  const raw = ecdh.getPrivateKey()
  raw.copy(scalar, 32 - raw.length)
  return { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey: scalar.toString('base64url') }
}

export async function loadVapidKeys(opts: {
  db: Database
  configured?: VapidKeys
  authSecret: string
  subject: string
}): Promise<VapidKeys> {
  if (opts.configured) {
    // web-push validates the pair's encoding; a typo fails here at start, not at the first push.
    try {
      const webpush = (await import('web-push')).default
      webpush.getVapidHeaders(
        'https://push.example',
        opts.configured.subject,
        opts.configured.publicKey,
        opts.configured.privateKey,
        'aes128gcm',
      )
    } catch (err) {
      throw new ConfigError(`Invalid configuration:\n  VAPID_PUBLIC_KEY / VAPID_PRIVATE_KEY / VAPID_SUBJECT: ${(err as Error).message}`)
    }
    return opts.configured
  }
  const fresh = generateVapidKeys()
  const proposed = JSON.stringify({ publicKey: fresh.publicKey, privateKey: sealPrivateKey(opts.authSecret, fresh.privateKey) })
  const stored = JSON.parse(await insertSettingOnce(opts.db, SETTING_KEY, proposed)) as { publicKey: string; privateKey: string }
  let privateKey: string
  try {
    privateKey = openPrivateKey(opts.authSecret, stored.privateKey)
  } catch {
    throw new ConfigError(
      'The stored VAPID private key cannot be opened with this AUTH_SECRET (was AUTH_SECRET changed?). ' +
        'Restore AUTH_SECRET, or set VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY.',
    )
  }
  return { publicKey: stored.publicKey, privateKey, subject: opts.subject }
}
