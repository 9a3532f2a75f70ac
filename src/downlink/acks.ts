// Acknowledgements are written in windows: a fan-out to a fleet brings thousands of PUBACKs a
// second, and on the embedded database each statement costs far more than the rows in it. A
// window closes after `windowMs` or `maxBatch` acknowledgements, whichever comes first, or at once
// when a resend needs to know what was delivered. An acknowledgement lost in a crash before its
// window is written only means the message is sent again (QoS 1 allows it; devices skip it by seq).

type Ack = { deviceId: string; seq: number; resolve: (kind: string | undefined) => void; reject: (err: unknown) => void }

export type AckWriter = {
  /** Resolves with the message's kind once written, or undefined when the device has no such message. */
  add(deviceId: string, seq: number): Promise<string | undefined>
  /** Writes what is waiting now, if anything of this device (or anything at all) waits. */
  flush(deviceId?: string): Promise<void>
}

export function ackWriter(
  write: (acks: ReadonlyArray<{ deviceId: string; seq: number }>) => Promise<Map<string, string>>,
  opts: { windowMs: number; maxBatch: number },
): AckWriter {
  let queue: Ack[] = []
  let timer: NodeJS.Timeout | undefined
  let writing: Promise<void> = Promise.resolve()

  function flush(deviceId?: string): Promise<void> {
    if (deviceId !== undefined && !queue.some((a) => a.deviceId === deviceId)) return writing
    if (!queue.length) return writing
    clearTimeout(timer)
    timer = undefined
    const batch = queue
    queue = []
    // One window at a time, in order: a later window never overtakes an earlier one.
    writing = writing.then(async () => {
      try {
        const found = await write(batch)
        for (const a of batch) a.resolve(found.get(`${a.deviceId}:${a.seq}`))
      } catch (err) {
        for (const a of batch) a.reject(err)
      }
    })
    return writing
  }

  return {
    add(deviceId, seq) {
      return new Promise((resolve, reject) => {
        queue.push({ deviceId, seq, resolve, reject })
        if (queue.length >= opts.maxBatch) void flush()
        else if (!timer) {
          timer = setTimeout(() => void flush(), opts.windowMs)
          timer.unref()
        }
      })
    },
    flush,
  }
}
