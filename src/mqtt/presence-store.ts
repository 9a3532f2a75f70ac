// Presence writes, batched: every connect and disconnect still gets its own Event row (with the
// time the broker saw it), but the rows of devices connecting at the same time go out as one
// UPDATE of the device rows and one multi-row INSERT of events instead of two statements each.
import type { Database } from '../db/client.js'
import { setPresenceMany, type PresenceUpdated } from '../devices/repository.js'
import { insertEvents, lastDeviceEvents, type EventRow } from '../events/repository.js'
import { batched } from '../../broker/batching.js'
import type { DeviceOwner } from './credentials.js'

export type PresenceWrite = {
  type: 'device.connected' | 'device.disconnected'
  deviceId: string
  /** Who the event is attributed to: the owner when the device authenticated. */
  owner?: DeviceOwner
  data: Record<string, unknown>
  at: Date
  /** The connection this event belongs to ("<broker id>/<uuid>"). */
  connectionId: string
  /** The device row's new isActive; absent when the row must not change (a takeover's old connection). */
  setActive?: boolean
  /** Also read the device's previous event, when it comes back from being inactive. */
  previousWhenInactive?: boolean
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

/** Writes one batch in a transaction: device rows, the previous events asked for, the new events. */
async function writeBatch(db: Database, writes: readonly PresenceWrite[]): Promise<Array<PresenceWritten | Error>> {
  return db.transaction(async (tx) => {
    // The same device appears at most once per batch: writes of one device are chained (presence.ts).
    const updated = new Map(
      (
        await setPresenceMany(
          tx,
          writes
            .filter((w) => w.setActive !== undefined)
            .map((w) => ({ id: w.deviceId, active: w.setActive!, at: w.at, connectionId: w.connectionId })),
        )
      ).map((d) => [d.id, d]),
    )
    const superseded = new Set(writes.filter((w) => w.setActive === false && !updated.has(w.deviceId)).map((w) => w.deviceId))
    const comeBack = writes.filter((w) => w.previousWhenInactive && updated.get(w.deviceId)?.wasActive === false).map((w) => w.deviceId)
    // Read before this batch's events exist, so "previous" is really the one before.
    const previous = new Map((await lastDeviceEvents(tx, comeBack)).map((e) => [e.deviceId, e]))
    // A connect that replaced a live connection the database still showed (the device moved to
    // this node, or its node died before recording the end): that connection's disconnect, written
    // here unless its own node already did (one disconnect per connection, by a unique index).
    const replaced = writes.flatMap((w) => {
      const before = w.setActive ? updated.get(w.deviceId)?.previousConnectionId : undefined
      if (!before || before === w.connectionId) return []
      const data = { reason: 'takeover', clientId: w.deviceId, connectionId: before, replacedBy: w.connectionId }
      return [
        {
          type: 'device.disconnected',
          deviceId: w.deviceId,
          userId: w.owner?.userId ?? null,
          organizationId: w.owner?.organizationId ?? null,
          data,
          at: new Date(w.at.getTime() - 1),
        },
      ]
    })
    const rows = await insertEvents(tx, [
      ...replaced,
      ...writes.map((w) => ({
        type: w.type,
        deviceId: w.deviceId,
        userId: w.owner?.userId ?? null,
        organizationId: w.owner?.organizationId ?? null,
        data: superseded.has(w.deviceId) ? { ...w.data, reason: 'takeover' } : w.data,
        at: w.at,
      })),
    ])
    // RETURNING keeps the order of VALUES in practice but does not promise it: match by content.
    const key = (deviceId: string | null, type: string, data: Record<string, unknown>) => `${deviceId}|${type}|${String(data.connectionId)}`
    const byKey = new Map(rows.map((r) => [key(r.deviceId, r.type, r.data), r]))
    return writes.map((w) => {
      const event = byKey.get(key(w.deviceId, w.type, w.data))
      if (!event && w.type !== 'device.disconnected') return new Error(`event of ${w.deviceId} not stored`)
      return { event, device: updated.get(w.deviceId), previous: previous.get(w.deviceId), superseded: superseded.has(w.deviceId) }
    })
  })
}

/** Batches of up to 500 devices, at most two batches in flight (PGlite serializes anyway). */
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
    { concurrency: 2, maxBatchSize: 500 },
  )
  return { write: (w: PresenceWrite) => loader.load(w) }
}
