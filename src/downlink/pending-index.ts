// Which devices may have pending messages, kept in memory so that a device with none (most of a
// fleet reconnecting after a restart) starts its session without a resend query. Valid only where
// this process is the only writer of device_message (one instance on the embedded broker): in a
// cluster, or behind an external broker that several instances share, another process records
// messages this one never sees, so there the index answers "maybe" for every device.
//
// It may name a device that has none (a superset is safe: one query too many), never the reverse:
// a device is added before a message to it is recorded, and removed only when a read of its pending
// messages found none and no recording of a message to it was open, began or ended while it read
// (one that ended after the read began may have committed after the read's snapshot).

export type PendingIndex = {
  /** A message to the device is about to be recorded; `done` once it is committed (or failed). */
  recording(deviceId: string): { done(): void }
  /** False only when the device is known to have no pending messages. */
  mayHave(deviceId: string): boolean
  /** A read of the device's pending messages begins: pass the token to `foundNone` if it finds none. */
  reading(): number
  /** The read begun at `token` found no pending message for the device. */
  foundNone(deviceId: string, token: number): void
}

/** Every device may have pending messages: for a process that is not the only writer. */
export const unknownPending: PendingIndex = {
  recording: () => ({ done() {} }),
  mayHave: () => true,
  reading: () => 0,
  foundNone() {},
}

/**
 * `load` lists the devices with pending messages in the database (read once, at start); until it
 * has answered, every device may have some.
 */
export function pendingIndex(load: () => Promise<readonly string[]>, log: { warn: (o: object, m: string) => void }): PendingIndex {
  const maybe = new Set<string>()
  /** Recordings not yet committed, per device. */
  const open = new Map<string, number>()
  /** Per device, the clock when a recording of it last began or ended. */
  const lastRecording = new Map<string, number>()
  let clock = 0
  let loaded = false
  load().then(
    (ids) => {
      for (const id of ids) maybe.add(id)
      loaded = true
    },
    (err: unknown) => log.warn({ err }, 'could not list the devices with pending messages: every session start asks the database'),
  )

  return {
    recording(deviceId) {
      clock += 1
      maybe.add(deviceId)
      lastRecording.set(deviceId, clock)
      open.set(deviceId, (open.get(deviceId) ?? 0) + 1)
      let finished = false
      return {
        done() {
          if (finished) return
          finished = true
          clock += 1
          lastRecording.set(deviceId, clock)
          const n = (open.get(deviceId) ?? 1) - 1
          if (n > 0) open.set(deviceId, n)
          else open.delete(deviceId)
        },
      }
    },
    mayHave: (deviceId) => !loaded || maybe.has(deviceId),
    reading: () => clock,
    foundNone(deviceId, token) {
      if (!loaded || open.has(deviceId) || (lastRecording.get(deviceId) ?? 0) > token) return
      maybe.delete(deviceId)
      lastRecording.delete(deviceId)
    },
  }
}
