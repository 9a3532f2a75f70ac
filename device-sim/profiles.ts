// Display profiles the simulator can pretend to be. Sizes are those of common panels: a 7.5"
// 1-bit e-paper (800×480), the same panel in 4-grey mode, 7.3" Spectra 6 and ACeP 7-colour
// e-paper (800×480), and a 7" LCD (1024×600).
export type Palette = 'bw' | 'gray4' | 'spectra6' | 'acep7' | 'color'

export type DisplayProfile = { width: number; height: number; palette: Palette; fit?: 'cover' | 'contain'; inline?: boolean }

export const PROFILES: Record<string, DisplayProfile> = {
  'bw-800x480': { width: 800, height: 480, palette: 'bw' },
  gray4: { width: 800, height: 480, palette: 'gray4' },
  spectra6: { width: 800, height: 480, palette: 'spectra6' },
  acep7: { width: 800, height: 480, palette: 'acep7' },
  color: { width: 1024, height: 600, palette: 'color' },
}

export const PROFILE_NAMES = Object.keys(PROFILES)

/** The profile named `name` (a palette name such as `bw` also works), with optional size overrides. */
export function resolveProfile(name: string, size: { width?: number; height?: number; inline?: boolean } = {}): DisplayProfile {
  const base = PROFILES[name] ?? Object.values(PROFILES).find((p) => p.palette === name)
  if (!base) throw new RangeError(`unknown profile "${name}" (choose ${PROFILE_NAMES.join(', ')})`)
  const profile: DisplayProfile = { ...base, width: size.width ?? base.width, height: size.height ?? base.height }
  for (const [k, v] of [['width', profile.width], ['height', profile.height]] as const) {
    if (!Number.isInteger(v) || v < 8 || v > 4096) throw new RangeError(`${k} must be a whole number from 8 to 4096`)
  }
  if (size.inline) profile.inline = true
  return profile
}
