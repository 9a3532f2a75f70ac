// A screen's source headers (API keys, bearer tokens) are stored sealed with AES-256-GCM under a
// key derived from AUTH_SECRET, as the VAPID private key is: a database dump alone does not reveal
// them. Only the names are ever shown.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'

function sealingKey(authSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', authSecret, 'dps-screens', 'screen source headers sealing', 32))
}

export function sealHeaders(authSecret: string, headers: Record<string, string>): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', sealingKey(authSecret), iv)
  const body = Buffer.concat([cipher.update(JSON.stringify(headers), 'utf8'), cipher.final()])
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.')
}

/** The headers, or undefined when they cannot be opened (AUTH_SECRET changed): the fetch goes without them. */
export function openHeaders(authSecret: string, sealed: string): Record<string, string> | undefined {
  try {
    const [iv, tag, body] = sealed.split('.').map((s) => Buffer.from(s, 'base64url'))
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(authSecret), iv!)
    decipher.setAuthTag(tag!)
    return JSON.parse(Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8')) as Record<string, string>
  } catch {
    return undefined
  }
}
