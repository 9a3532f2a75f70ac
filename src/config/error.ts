/** A configuration the service cannot start with; the message names each variable or file at fault. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

export function invalid(lines: readonly string[]): ConfigError {
  return new ConfigError(`Invalid configuration:\n${lines.map((l) => `  ${l}`).join('\n')}`)
}
