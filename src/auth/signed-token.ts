// A session token reaches clients in two forms: the bare token (the body of sign-in) and the signed
// cookie value `token.signature` (the `set-auth-token` header, which the bearer plugin accepts). Both
// are credentials, so an operation that takes a token in its body must accept both or refuse the
// one it cannot use, never answer success for a form it silently ignores.
import { createHmac, timingSafeEqual } from 'node:crypto'

/** The bare token of either form; null for a signed form whose signature is not ours. */
export function bareSessionToken(value: string, secret: string): string | null {
  let decoded = value
  if (value.includes('%')) {
    try {
      decoded = decodeURIComponent(value)
    } catch {
      return null
    }
  }
  const dot = decoded.indexOf('.')
  if (dot < 0) return decoded
  const token = decoded.slice(0, dot)
  const given = Buffer.from(decoded.slice(dot + 1), 'base64')
  const expected = createHmac('sha256', secret).update(token).digest()
  return given.length === expected.length && timingSafeEqual(given, expected) ? token : null
}
