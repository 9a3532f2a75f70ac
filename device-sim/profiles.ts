// Display profiles the simulator can pretend to be: the service's presets of common panels.
import { DISPLAY_PRESETS, DITHER_METHODS, type DitherMethod, type Palette } from '../src/images/profiles.js'

export type { Palette }
export { DITHER_METHODS }

export type DisplayProfile = {
  width: number
  height: number
  palette: Palette
  fit?: 'cover' | 'contain'
  inline?: boolean
  dither?: DitherMethod
}

export const PROFILES: Record<string, DisplayProfile> = DISPLAY_PRESETS

export const PROFILE_NAMES = Object.keys(PROFILES)

/** The profile named `name` (a palette name such as `bw` also works), with optional size overrides. */
export function resolveProfile(
  name: string,
  size: { width?: number; height?: number; inline?: boolean; dither?: string } = {},
): DisplayProfile {
  const base = PROFILES[name] ?? Object.values(PROFILES).find((p) => p.palette === name)
  if (!base) throw new RangeError(`unknown profile "${name}" (choose ${PROFILE_NAMES.join(', ')})`)
  const profile: DisplayProfile = { ...base, width: size.width ?? base.width, height: size.height ?? base.height }
  for (const [k, v] of [
    ['width', profile.width],
    ['height', profile.height],
  ] as const) {
    if (!Number.isInteger(v) || v < 8 || v > 4096) throw new RangeError(`${k} must be a whole number from 8 to 4096`)
  }
  if (size.inline) profile.inline = true
  if (size.dither !== undefined) {
    const method = DITHER_METHODS.find((m) => m === size.dither)
    if (!method) throw new RangeError(`unknown dither method "${size.dither}" (choose ${DITHER_METHODS.join(', ')})`)
    profile.dither = method
  }
  return profile
}
