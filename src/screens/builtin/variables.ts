// Screen variables come from owners as untyped JSON: each reader falls back to its default
// instead of throwing, so a typo in a variable shows a sensible screen rather than an error.
import { DateTime } from 'luxon'

export function stringVar(variables: Record<string, unknown>, key: string, fallback: string): string {
  const value = variables[key]
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : fallback
}

export function numberVar(variables: Record<string, unknown>, key: string, fallback: number, min: number, max: number): number {
  const value = variables[key]
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN
  return Number.isFinite(n) ? Math.min(max, Math.max(min, Math.round(n))) : fallback
}

export function boolVar(variables: Record<string, unknown>, key: string): boolean | undefined {
  const value = variables[key]
  if (typeof value === 'boolean') return value
  if (value === 'true' || value === 'yes' || value === 1) return true
  if (value === 'false' || value === 'no' || value === 0) return false
  return undefined
}

/** An IANA zone from the variables, else the screen's, else UTC: a bad name must not break the screen. */
export function zoneVar(variables: Record<string, unknown>, fallback: string): string {
  for (const candidate of [variables.timeZone, fallback]) {
    if (typeof candidate === 'string' && DateTime.now().setZone(candidate).isValid) return candidate
  }
  return 'UTC'
}

/** A BCP 47 locale Intl accepts, else en-US. */
export function localeVar(variables: Record<string, unknown>): string {
  const value = variables.locale
  if (typeof value !== 'string' || value === '') return 'en-US'
  try {
    return Intl.DateTimeFormat.supportedLocalesOf([value]).length > 0 ? value : 'en-US'
  } catch {
    return 'en-US'
  }
}
