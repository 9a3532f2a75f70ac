// Issuing a device's credentials, for every transport: the pairing's record becomes active, the
// secret's hash becomes the device's (its MQTT password, a TRMNL frame's access token; its logs
// and firmware links take it too) and device.credentials_issued names the transport, in one
// transaction, so no crash leaves a device with a secret and no record of it, or the reverse.
import type { Database, Executor } from '../db/client.js'
import { insertEvent } from '../events/repository.js'
import type { PresenceTransport } from './presence.js'
import { setDeviceSecret, transitionDeviceInit, type DeviceInitRow, type DeviceRow } from './repository.js'
import type { DeviceInitStatus } from './tables.js'

/** Thrown inside the transaction to undo what `prepare` did when nothing is issued after all. */
class NotIssued extends Error {}

export type IssuedCredentials<T> = { init: DeviceInitRow; device: DeviceRow | undefined; prepared: T }

/**
 * Issues `secretHash` to the device whose pairing is in one of `from` (`approved` for a first
 * issue): undefined, with nothing changed, when it is not (another request issued them first).
 * `prepare` runs first in the same transaction (a re-paired frame's token moving onto its
 * earlier device); when it answers undefined nothing is issued either.
 */
export async function issueCredentials<T = true>(
  db: Database,
  issue: {
    deviceId: string
    secretHash: string
    transport: PresenceTransport
    from: DeviceInitStatus[]
    /** More for the event (e.g. `repaired`). */
    data?: Record<string, unknown>
    at?: Date
  },
  prepare?: (tx: Executor) => Promise<T | undefined>,
): Promise<IssuedCredentials<T> | undefined> {
  const issued = db.transaction(async (tx) => {
    const prepared = prepare ? await prepare(tx) : (true as T)
    if (prepared === undefined) return undefined
    const init = await transitionDeviceInit(tx, issue.deviceId, issue.from, 'active', { credentialsIssuedAt: issue.at ?? new Date() })
    // What `prepare` did goes too: the pairing is not there to issue to.
    if (!init) throw new NotIssued()
    const device = await setDeviceSecret(tx, issue.deviceId, issue.secretHash)
    await insertEvent(tx, {
      type: 'device.credentials_issued',
      deviceId: issue.deviceId,
      userId: device?.userId,
      organizationId: device?.organizationId,
      data: { transport: issue.transport, ...issue.data },
    })
    return { init, device, prepared }
  })
  return issued.catch((err: unknown) => {
    if (err instanceof NotIssued) return undefined
    throw err
  })
}
