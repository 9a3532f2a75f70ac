// The simulator's state file: the pairing in progress, the MQTT credentials once issued, and
// what the device shows. Written atomically with mode 0600, because it holds the device secret.
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { DisplayProfile } from './profiles.js'

export type Credentials = {
  mqttUrl: string
  websocketUrl: string
  username: string
  password: string
  clientId: string
  topics: Record<string, string>
  /** The Ed25519 key firmware offers are signed with (raw, base64). */
  firmwareKey?: string
}

/** A pairing the server has started and not yet decided; kept so a restart keeps polling it. */
export type PendingPairing = {
  deviceId: string
  deviceCode: string
  pinCode: string
  userCode: string
  verificationUri: string
  verificationUriComplete: string
  expiresAt: string
  interval: number
}

type ShownImage = { imageId: string; url: string; sha256: string; format: string; file?: string }

export type SimState = {
  version: 1
  /** The service these credentials belong to. */
  server: string
  name: string
  display: DisplayProfile
  pairing?: PendingPairing
  credentials?: Credentials
  deviceId?: string
  battery: number
  configVersion: number
  image?: ShownImage
  /** Recent command and image ids, so a message delivered twice is handled once. */
  seenCommands: string[]
  seenImages: string[]
  /** The firmware installed by an update (the --firmware option until then). */
  firmware?: string
  /** The firmware key, as the latest config gave it. */
  firmwareKey?: string
  /** The seq of the newest firmware offer message handled: older ones are ignored. */
  otaSeq?: number
  /** Offers already worked on (release ids), so a redelivered offer is not installed twice. */
  seenOffers?: string[]
  /** Installed and restarted: up/ota `succeeded` is sent once connected again. */
  installed?: string
}

export class StateFileError extends Error {
  override name = 'StateFileError'
}

export function freshState(server: string, name: string, display: DisplayProfile, battery = 100): SimState {
  return { version: 1, server, name, display, battery, configVersion: 0, seenCommands: [], seenImages: [] }
}

export async function loadState(path: string): Promise<SimState | undefined> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new StateFileError(`cannot read state file ${path}: ${(err as Error).message}`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new StateFileError(`state file ${path} is not valid JSON; delete it to pair again`)
  }
  const s = parsed as Partial<SimState>
  if (!s || typeof s !== 'object' || s.version !== 1 || typeof s.server !== 'string' || !s.display) {
    throw new StateFileError(`state file ${path} is not a display-sim state file; delete it to pair again`)
  }
  return {
    ...s,
    battery: typeof s.battery === 'number' && s.battery >= 0 && s.battery <= 100 ? s.battery : 100,
    configVersion: Number.isInteger(s.configVersion) ? s.configVersion : 0,
    seenCommands: Array.isArray(s.seenCommands) ? s.seenCommands : [],
    seenImages: Array.isArray(s.seenImages) ? s.seenImages : [],
  } as SimState
}

/** Writes to a temporary file and renames it, so a crash never leaves half a file behind. */
export async function saveState(path: string, state: SimState): Promise<void> {
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 })
    const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 })
    // writeFile's mode applies only when it creates the file; a leftover temporary file keeps its own.
    await chmod(tmp, 0o600)
    await rename(tmp, path)
  } catch (err) {
    throw new StateFileError(`cannot write state file ${path}: ${(err as Error).message}`)
  }
}

/** Keeps the last `max` ids. */
export function remember(list: string[], id: string, max = 100): string[] {
  const next = list.filter((x) => x !== id)
  next.push(id)
  return next.length > max ? next.slice(next.length - max) : next
}
