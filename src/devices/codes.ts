// Codes and secrets of the pairing flow.
import { createHash, randomBytes, randomInt, randomUUID, timingSafeEqual } from 'node:crypto'

/** RFC 8628 section 6.1: consonants only, no ambiguous characters, no words. */
export const PIN_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'

export function newPinCode(): string {
  let s = ''
  for (let i = 0; i < 8; i++) s += PIN_ALPHABET[randomInt(PIN_ALPHABET.length)]
  return `${s.slice(0, 4)}-${s.slice(4)}`
}

/** Accepts what a person types: any case, with or without the dash or spaces. */
export function normalisePinCode(input: string): string | null {
  const s = input.toUpperCase().replace(/[\s-]/g, '')
  if (s.length !== 8 || [...s].some((c) => !PIN_ALPHABET.includes(c))) return null
  return `${s.slice(0, 4)}-${s.slice(4)}`
}

export const newUserCode = (): string => randomUUID()
export const newDeviceCode = (): string => randomUUID()
export const newDeviceId = (): string => randomUUID()

/** 256-bit MQTT password, base64url. */
export const newDeviceSecret = (): string => randomBytes(32).toString('base64url')

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')

export function matchesHash(candidate: string, storedHex: string | null | undefined): boolean {
  if (!storedHex) return false
  const a = Buffer.from(sha256(candidate), 'hex')
  const b = Buffer.from(storedHex, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}
