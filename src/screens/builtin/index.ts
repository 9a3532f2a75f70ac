// The built-in screens (issue 35): each is a Liquid template with its CSS and a pure `prepare`
// that turns the screen's source (an ICS body, a JSON answer, or nothing) into the template's
// `data`. They need no network of their own: the backend fetches the source and renders.
import { calendar } from './calendar.js'
import { clock } from './clock.js'
import { frameStatus } from './frame-status.js'
import type { BuiltinScreen } from './types.js'
import { weather } from './weather.js'

export type { BuiltinScreen, PrepareInput } from './types.js'

export const builtinScreens: Record<string, BuiltinScreen> = {
  clock,
  calendar,
  'frame-status': frameStatus,
  weather,
}
