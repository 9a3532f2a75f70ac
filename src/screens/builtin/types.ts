// The contract between the built-in screens and the screens backend (issue 35).
import type { ScreenDeviceContext } from '../context.js'

export type { ScreenDeviceContext }

export type PrepareInput = {
  /** The string body for an ICS source, the parsed JSON for a JSON source, undefined for none. */
  raw: unknown
  variables: Record<string, unknown>
  now: Date
  timeZone: string
  device?: ScreenDeviceContext
}

export type BuiltinScreen = {
  name: string
  description: string
  /** Liquid producing HTML; rendered with `data` (what prepare returns), `variables` and `device`. */
  template: string
  /** Class selectors only: the renderer inlines them into style attributes. */
  css?: string
  source: 'none' | 'ics' | 'json'
  prepare(input: PrepareInput): Record<string, unknown>
}
