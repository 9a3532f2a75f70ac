// Presence writes, batched: every connect and disconnect still gets its own Event row (with the
// time the broker saw it), but the changes of devices connecting at the same time go out as one
// statement (device rows, previous events, new events) instead of several each.
import type { Database } from '../db/client.js'
import type { EventRow } from '../events/repository.js'
import { batched } from '../../broker/batching.js'
import { recordPresenceMany, type DeviceCredentialRow, type PresenceUpdated } from './repository.js'

/** The owner and name a device's events are attributed to. */
export type DeviceOwner = Pick<DeviceCredentialRow, 'userId' | 'organizationId' | 'name'>

export type PresenceWrite = {
  type: 'device.connected' | 'device.disconnected'
  deviceId: string
  /** Who the event is attributed to: the owner when the device authenticated. */
  owner?: DeviceOwner
  data: Record<string, unknown>
  at: Date
  /** The connection this event belongs to ("<broker id>/<uuid>"); null for a polling device, which holds none. */
  connectionId: string | null
  /** The device row's new isActive; absent when the row must not change (a takeover's old connection). */
  setActive?: boolean
  /** Also read the device's previous event, when it comes back from being inactive. */
  previousWhenInactive?: boolean
  /** See PresenceChangeRow.whenInactive (a poll). */
  whenInactive?: boolean
  /** See PresenceChangeRow.seenBefore (a poll overdue). */
  seenBefore?: Date
}

export type PresenceWritten = {
  /** Absent for a disconnect another node already recorded (the node the device moved to). */
  event?: EventRow
  /** The device row as updated (absent when not updated, or when the device no longer exists). */
  device?: PresenceUpdated
  /** The device's newest event before this one, when asked for and the device was inactive. */
  previous?: EventRow
  /** A disconnect whose connection was no longer the device's live one: it reconnected elsewhere first. */
  superseded?: boolean
}

/** Writes one batch in one statement (see recordPresenceMany): device rows, the previous events asked for, the new events. */
async function writeBatch(db: Database, writes: readonly PresenceWrite[]): Promise<Array<PresenceWritten | Error>> {
  // The same device appears at most once per batch: writes of one device are chained (presence.ts).
  const { updated, previous, events } = await recordPresenceMany(
    db,
    writes.map((w) => ({
      deviceId: w.deviceId,
      active: w.setActive,
      at: w.at,
      connectionId: w.connectionId,
      type: w.type,
      data: w.data,
      userId: w.owner?.userId ?? null,
      organizationId: w.owner?.organizationId ?? null,
      previousWhenInactive: Boolean(w.previousWhenInactive),
      whenInactive: w.whenInactive,
      seenBefore: w.seenBefore,
    })),
  )
  const byDevice = new Map(updated.map((d) => [d.id, d]))
  const previousOf = new Map(previous.map((e) => [e.deviceId, e as EventRow]))
  // A disconnect that did not apply: the device reconnected elsewhere first (stored with reason "takeover").
  const superseded = new Set(writes.filter((w) => w.setActive === false && !byDevice.has(w.deviceId)).map((w) => w.deviceId))
  // RETURNING keeps the order of VALUES in practice but does not promise it: match by content.
  const key = (deviceId: string | null, type: string, data: Record<string, unknown>) => `${deviceId}|${type}|${String(data.connectionId)}`
  const byKey = new Map(events.map((r) => [key(r.deviceId, r.type, r.data), r as EventRow]))
  return writes.map((w) => {
    const event = byKey.get(key(w.deviceId, w.type, w.data))
    if (!event && w.type !== 'device.disconnected' && !w.whenInactive) return new Error(`event of ${w.deviceId} not stored`)
    return { event, device: byDevice.get(w.deviceId), previous: previousOf.get(w.deviceId), superseded: superseded.has(w.deviceId) }
  })
}

/**
 * Batches of up to 500 devices, one batch in flight: the writes that arrive meanwhile wait and go
 * out together next. With two in flight a connect storm's batches held 2–8 devices each, so every
 * connect still paid most of a statement (its round trip, parse, plan and commit) in the service
 * and in PostgreSQL; PGlite serializes statements anyway.
 */
export function createPresenceStore(db: Database) {
  const loader = batched<PresenceWrite, PresenceWritten>(
    async (writes) => {
      try {
        return await writeBatch(db, writes)
      } catch (err) {
        if (writes.length === 1) throw err
        // One bad row (or a deadlock with another instance) must not cost the others their events.
        return Promise.all(
          writes.map((w) =>
            writeBatch(db, [w]).then(
              (r) => r[0]!,
              (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
            ),
          ),
        )
      }
    },
    { concurrency: 1, maxBatchSize: 500 },
  )
  return { write: (w: PresenceWrite) => loader.load(w) }
}
