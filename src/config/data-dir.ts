// Values kept in DATA_DIR (AUTH_SECRET, the firmware signing key, the broker id) when their
// variable is unset: read from there, or generated in memory and written only by persistGenerated.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, invalid } from './error.js'

/** A value generated because DATA_DIR held none: `name` is its file there, written at start. */
export type Generated = { name: string; value: string }

/**
 * What DATA_DIR/`name` holds, or undefined when there is no such file. Reading only: loadConfig
 * creates nothing (persistGenerated writes at start).
 */
function storedValue(dataDir: string, name: string): string | undefined {
  const file = join(dataDir, name)
  let text: string
  try {
    text = readFileSync(file, 'utf8').trim()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  if (!text) {
    throw invalid([
      `${file} is empty (a start stopped, or another is starting, while writing it): start again, or remove it to have it generated anew`,
    ])
  }
  return text
}

/** Gives each value kept in one DATA_DIR, noting in `generated` the ones made anew, in the order they were made. */
export type Keeper = (name: string, make: () => string) => string

/**
 * A value generated once and kept in DATA_DIR so it survives restarts: the stored one, or a new one
 * made in memory and noted in `generated` for persistGenerated to write when the service starts.
 */
export function keeper(dataDir: string, generated: Generated[]): Keeper {
  return (name, make) => {
    const stored = storedValue(dataDir, name)
    if (stored !== undefined) return stored
    const value = make()
    generated.push({ name, value })
    return value
  }
}

/**
 * Writes what loadConfig generated (config.generated) into DATA_DIR, creating the folder: the
 * explicit step at start (buildApp's first) that makes the next start use the same secret, key and
 * broker id. Each file is created with flag 'wx' (mode 0600), so of two processes starting on one
 * fresh DATA_DIR exactly one creates it. The other finds the file there (EEXIST) and reads it back:
 * the same value (a second buildApp on one config) is fine; another value means this process already
 * holds its own in `config` (parsed, possibly copied by its caller), so rather than patching config
 * in place it refuses to start, and a second start reads the winner's files. Files are written in the
 * order loadConfig made them and the first conflict stops, so of two racing starts one always goes on.
 */
export function persistGenerated(config: { dataDir: string; generated: readonly Generated[] }): void {
  if (!config.generated.length) return
  mkdirSync(config.dataDir, { recursive: true })
  for (const { name, value } of config.generated) {
    const file = join(config.dataDir, name)
    try {
      writeFileSync(file, `${value}\n`, { mode: 0o600, flag: 'wx' })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      if (readFileSync(file, 'utf8').trim() !== value) {
        throw new ConfigError(
          `Invalid configuration:\n  ${file} was written by another process starting on the same DATA_DIR at the same time: start again to use it`,
        )
      }
    }
  }
}
