// The durable downlink. Every message to a device is numbered and stored before it is handed to
// the transport (the embedded broker, the cluster, or an external broker), marked delivered when
// the device acknowledges it, and sent again, in order, when the device starts a session that
// lacks it. The same path in every mode, so no mode depends on a broker's memory.
import { batched } from '../../broker/batching.js'
import type { Bound, Executor } from '../db/client.js'
import type { DeviceLink, DurableLink, StagedMessage } from '../devices/sessions.js'
import { replacingKinds, type DownlinkKind } from '../mqtt/contract.js'
import { insertEvents } from '../events/repository.js'
import { ackWriter } from './acks.js'
import { pendingIndex, unknownPending } from './pending-index.js'
import {
  markDelivered,
  lastSeqOf,
  markPolled,
  markReported,
  pendingDevices,
  pendingMessages,
  pruneMessages,
  recordMessages,
  type NewMessage,
  type PollCarried,
  type StoredMessage,
} from './repository.js'

/** How long acknowledgements gather before they are written (see acks.ts). */
const ACK_WINDOW_MS = 50

export type OutboxLimits = {
  /** Pending messages kept per device; older ones are dropped (and that is an Event). */
  maxPerDevice: number
  /** Pending messages older than this are dropped. */
  maxAgeMs: number
  /** Delivered messages are kept this long (for inspection), then pruned. */
  keepDeliveredMs: number
}

type OutboxStats = { recorded: number; delivered: number; resent: number; dropped: number; unknownDevice: number }

/** The transport side: publishes one numbered message. */
export type Transport = Pick<DeviceLink, 'publish' | 'kick' | 'announce' | 'credentialsIssued' | 'credentialsRevoked'>

export type ResendOptions = {
  /** Seqs the transport still holds for the device and resends itself. */
  holding?: ReadonlySet<number>
  /** Only seqs above this (a resumed session: the broker holds everything up to it). */
  after?: number
  /** Only these kinds (what the device is subscribed to). */
  kinds?: ReadonlySet<string>
}

export type Outbox = DurableLink & {
  /** The device acknowledged `seq` (PUBACK or up/ack); resolves with the message's kind, or undefined when no such message exists. */
  delivered(deviceId: string, seq: number): Promise<string | undefined>
  /** The device reported the config version it applies and the image it shows: those messages arrived. */
  reported(deviceId: string, report: { configVersion?: number; shownImageId?: string | null }): Promise<void>
  /** Where a polling device's poll begins: its last seq (see markPolled). */
  pollStarts(deviceId: string): Promise<number>
  /** A polling device was answered: the messages its answer carried are delivered (see markPolled). */
  polled(deviceId: string, carried: PollCarried): Promise<void>
  /**
   * The device started a session: sends what it has not acknowledged, oldest first, except the
   * seqs the transport still holds for it (a resumed broker session resends those itself) and
   * kinds it is not subscribed to. Resolves with how many were sent.
   */
  resend(deviceId: string, opts?: ResendOptions): Promise<number>
  /** False when the device is known to have nothing pending (no resend needed; see pending-index.ts). */
  mayHavePending(deviceId: string): boolean
  /**
   * The device can receive live messages from now on and a resend will follow (the transport
   * waits for its other SUBSCRIBEs first): what is published live meanwhile is not resent.
   * `undefined` when the resend will not come after all (the connection closed first).
   */
  expectResend(deviceId: string, expected: boolean): void
  /** Enforces the bound; returns how many pending messages were dropped. */
  sweep(): Promise<number>
  stats: OutboxStats
  /** Resolves when every acknowledgement received so far is written. */
  settled(): Promise<void>
}

/** `{"seq":N,...}`: the seq goes first, so the broker's acknowledgement hook reads it without parsing the message. */
function numbered(seq: number, payload: object): Record<string, unknown> {
  return { seq, ...payload }
}

const SEQ_PREFIX = /^\{"seq":(\d{1,15})[,}]/

/** The seq of a message this service published, read from the first bytes of its payload. */
export function seqOf(payload: Buffer | Uint8Array | string | undefined): number | undefined {
  if (!payload) return undefined
  const head =
    typeof payload === 'string'
      ? payload.slice(0, 32)
      : Buffer.from(payload.buffer, payload.byteOffset, Math.min(32, payload.byteLength)).toString('latin1')
  const m = SEQ_PREFIX.exec(head)
  return m ? Number(m[1]) : undefined
}

/** What the outbox reads and writes: the drizzle repository in the app, a stand-in in test/downlink/resend-rules.test.ts. */
export type OutboxRepository = {
  recordMessages: Bound<typeof recordMessages>
  /** In the caller's transaction (stage): a message stored with the change it announces. */
  recordMessagesIn: typeof recordMessages
  markDelivered: Bound<typeof markDelivered>
  pendingMessages: Bound<typeof pendingMessages>
  /** The devices with pending messages (read once at start when the outbox is the only writer); absent in stand-ins. */
  pendingDevices?: Bound<typeof pendingDevices>
  pruneMessages: Bound<typeof pruneMessages>
  markReported: Bound<typeof markReported>
  markPolled: Bound<typeof markPolled>
  lastSeqOf: Bound<typeof lastSeqOf>
  insertEvents: Bound<typeof insertEvents>
}

/** The drizzle repository, bound to a database. */
export function outboxRepository(db: Executor): OutboxRepository {
  return {
    recordMessages: (...a) => recordMessages(db, ...a),
    recordMessagesIn: recordMessages,
    markDelivered: (...a) => markDelivered(db, ...a),
    pendingMessages: (...a) => pendingMessages(db, ...a),
    pendingDevices: (...a) => pendingDevices(db, ...a),
    pruneMessages: (...a) => pruneMessages(db, ...a),
    markReported: (...a) => markReported(db, ...a),
    markPolled: (...a) => markPolled(db, ...a),
    lastSeqOf: (...a) => lastSeqOf(db, ...a),
    insertEvents: (...a) => insertEvents(db, ...a),
  }
}

/**
 * Which of a device's pending messages a resend sends: not those the transport still holds (it
 * resends them itself), none up to `after` (a resumed session holds them), only kinds the device
 * subscribed to, and none already published live since the device could receive them.
 */
export function toResend(rows: readonly StoredMessage[], opts: ResendOptions, live: ReadonlySet<number>): StoredMessage[] {
  return rows.filter(
    (m) =>
      !opts.holding?.has(m.seq) &&
      !(opts.after !== undefined && m.seq <= opts.after) &&
      !(opts.kinds && !opts.kinds.has(m.kind)) &&
      !live.has(m.seq),
  )
}

export function createOutbox(deps: {
  repo: OutboxRepository
  transport: Transport
  limits: OutboxLimits
  log: { warn: (o: object, m: string) => void }
  /** Milliseconds since the epoch: what is too old to send or keep is measured from it. */
  now?: () => number
  /**
   * This process is the only one recording messages (one instance on the embedded broker): which
   * devices have pending messages is then known in memory, and a session start of a device with
   * none asks the database nothing.
   */
  soleWriter?: boolean
}): Outbox {
  const { repo, transport, limits } = deps
  const now = deps.now ?? Date.now
  const pendingDevices = repo.pendingDevices
  const index = deps.soleWriter && pendingDevices ? pendingIndex(() => pendingDevices(), deps.log) : unknownPending
  const stats: OutboxStats = { recorded: 0, delivered: 0, resent: 0, dropped: 0, unknownDevice: 0 }

  // Concurrent publishes (a fan-out, a schedule firing for a fleet) share one transaction; each
  // caller publishes once its batch is stored, in the order the seqs were given.
  const recorder = batched<NewMessage, number | undefined>((messages) => repo.recordMessages(messages), {
    concurrency: 1,
    maxBatchSize: 1000,
  })
  const acks = ackWriter(async (batch) => new Map((await repo.markDelivered(batch)).map((r) => [`${r.deviceId}:${r.seq}`, r.kind])), {
    windowMs: ACK_WINDOW_MS,
    maxBatch: 2000,
  })
  const pending = batched<string, StoredMessage[]>(
    async (ids) => {
      const rows = await repo.pendingMessages(ids, limits.maxPerDevice, new Date(now() - limits.maxAgeMs))
      const byDevice = new Map<string, StoredMessage[]>()
      for (const r of rows) byDevice.set(r.deviceId, [...(byDevice.get(r.deviceId) ?? []), r])
      return ids.map((id) => byDevice.get(id) ?? [])
    },
    { concurrency: 1, maxBatchSize: 500 },
  )
  // A resend runs once the device has subscribed, so a message published live meanwhile reaches it
  // without the resend; each side skips what the other already sent (a duplicate is still possible
  // across cluster nodes, as QoS 1 allows, and the device drops it by its seq).
  // A resend's record outlives it while publishes that were being recorded during it are still on
  // their way (`done`): one whose message the resend read and sent must find that out, not send
  // it a second time (test/downlink/outbox.test.ts, "published while a resend runs").
  const resending = new Map<string, { live: Set<number>; resent: Set<number>; done?: boolean }>()
  /** Per device, publishes between being recorded and being sent. */
  const inflight = new Map<string, number>()

  function forgetIfDone(deviceId: string) {
    if (!inflight.get(deviceId) && resending.get(deviceId)?.done) resending.delete(deviceId)
  }

  async function publish(deviceId: string, kind: DownlinkKind, payload: object, opts: { retain?: boolean } = {}) {
    const retain = opts.retain ?? false
    await sending(deviceId, async () => {
      const recording = index.recording(deviceId)
      const seq = await recorder
        .load({
          deviceId,
          kind,
          payload: payload as Record<string, unknown>,
          retain,
          replacesOlder: replacingKinds.has(kind),
        })
        .finally(() => recording.done())
      await handOver(deviceId, kind, payload, retain, seq)
    })
  }

  async function stage(
    tx: Executor,
    deviceId: string,
    kind: DownlinkKind,
    payload: object,
    opts: { retain?: boolean } = {},
  ): Promise<StagedMessage> {
    const retain = opts.retain ?? false
    // Open until sent: the caller's transaction commits in between (never, when it rolls back: the
    // device then stays "may have pending", which costs a query, not a message).
    const recording = index.recording(deviceId)
    const [seq] = await repo.recordMessagesIn(tx, [
      { deviceId, kind, payload: payload as Record<string, unknown>, retain, replacesOlder: replacingKinds.has(kind) },
    ])
    // Until `send`, a resend that reads it after the commit sends it; `send` then knows (resent).
    return { send: () => sending(deviceId, () => handOver(deviceId, kind, payload, retain, seq)).finally(() => recording.done()) }
  }

  async function stageAll(
    tx: Executor,
    messages: ReadonlyArray<{ deviceId: string; kind: DownlinkKind; payload: object; retain?: boolean }>,
  ): Promise<StagedMessage> {
    const seqs: Array<number | undefined> = []
    const recordings = [...new Set(messages.map((m) => m.deviceId))].map((id) => index.recording(id))
    for (let i = 0; i < messages.length; i += 1000)
      seqs.push(
        ...(await repo.recordMessagesIn(
          tx,
          messages.slice(i, i + 1000).map((m) => ({
            deviceId: m.deviceId,
            kind: m.kind,
            payload: m.payload as Record<string, unknown>,
            retain: m.retain ?? false,
            replacesOlder: replacingKinds.has(m.kind),
          })),
        )),
      )
    return {
      send: async () => {
        try {
          await sendStaged()
        } finally {
          for (const r of recordings) r.done()
        }
      },
    }

    async function sendStaged() {
      // Together, as concurrent publishes are; each device's messages in the order given.
      const byDevice = new Map<string, number[]>()
      for (const [i, m] of messages.entries()) {
        const list = byDevice.get(m.deviceId)
        if (list) list.push(i)
        else byDevice.set(m.deviceId, [i])
      }
      const devices = [...byDevice]
      for (let i = 0; i < devices.length; i += 500)
        await Promise.all(
          devices.slice(i, i + 500).map(([deviceId, indexes]) =>
            sending(deviceId, async () => {
              for (const n of indexes) {
                const m = messages[n]!
                await handOver(deviceId, m.kind, m.payload, m.retain ?? false, seqs[n])
              }
            }),
          ),
        )
    }
  }

  /** Counts a publish between being recorded and being sent (see `resending`). */
  async function sending(deviceId: string, work: () => Promise<void>) {
    inflight.set(deviceId, (inflight.get(deviceId) ?? 0) + 1)
    try {
      await work()
    } finally {
      const n = (inflight.get(deviceId) ?? 1) - 1
      if (n > 0) inflight.set(deviceId, n)
      else inflight.delete(deviceId)
      forgetIfDone(deviceId)
    }
  }

  /** Hands a recorded message to the transport, unless a resend sent it already. */
  async function handOver(deviceId: string, kind: DownlinkKind, payload: object, retain: boolean, seq: number | undefined) {
    if (seq === undefined) {
      // The device was deleted meanwhile: nobody is left to receive it.
      stats.unknownDevice += 1
      return
    }
    stats.recorded += 1
    const active = resending.get(deviceId)
    if (active?.resent.has(seq)) return
    active?.live.add(seq)
    await transport.publish(deviceId, kind, numbered(seq, payload), { retain })
  }

  function delivered(deviceId: string, seq: number): Promise<string | undefined> {
    const task = acks.add(deviceId, seq)
    void task.then(
      (kind) => {
        if (kind) stats.delivered += 1
      },
      (err) => deps.log.warn({ err, deviceId, seq }, 'could not mark a message delivered'),
    )
    return task
  }

  function expectResend(deviceId: string, expected: boolean) {
    if (!expected) {
      resending.delete(deviceId)
      return
    }
    const current = resending.get(deviceId)
    // A finished resend's record kept for publishes still on their way: a new window begins, and
    // what that resend sent is still not sent again.
    if (!current || current.done) resending.set(deviceId, { live: new Set(), resent: new Set(current?.resent) })
  }

  async function resend(deviceId: string, opts: ResendOptions = {}): Promise<number> {
    // Live publishes since the device could receive them (expectResend) are already on their way.
    const active = resending.get(deviceId) ?? { live: new Set<number>(), resent: new Set<number>() }
    active.done = false
    resending.set(deviceId, active)
    // What the device acknowledged so far is written first, or it would be sent again.
    try {
      if (!index.mayHave(deviceId)) return 0
      const token = index.reading()
      await acks.flush(deviceId).catch(() => {})
      const rows = await pending.load(deviceId)
      if (!rows.length) index.foundNone(deviceId, token)
      let sent = 0
      for (const m of toResend(rows, opts, active.live)) {
        active.resent.add(m.seq)
        await transport.publish(deviceId, m.kind as DownlinkKind, numbered(m.seq, m.payload), { retain: m.retain })
        sent += 1
      }
      stats.resent += sent
      return sent
    } finally {
      if (resending.get(deviceId) === active) {
        active.done = true
        forgetIfDone(deviceId)
      }
    }
  }

  async function sweep(): Promise<number> {
    const at = now()
    const { limit, expired } = await repo.pruneMessages({
      limit: limits.maxPerDevice,
      before: new Date(at - limits.maxAgeMs),
      deliveredBefore: new Date(at - limits.keepDeliveredMs),
    })
    const runs = [...limit.map((r) => ({ ...r, reason: 'limit' })), ...expired.map((r) => ({ ...r, reason: 'expired' }))]
    if (runs.length) {
      await repo.insertEvents(
        runs.map((r) => ({
          type: 'device.downlink_dropped',
          deviceId: r.deviceId,
          userId: r.userId,
          organizationId: r.organizationId,
          data: { reason: r.reason, count: r.count, firstSeq: r.firstSeq, lastSeq: r.lastSeq },
          at: new Date(now()),
        })),
      )
    }
    const dropped = runs.reduce((n, r) => n + r.count, 0)
    stats.dropped += dropped
    return dropped
  }

  async function reported(deviceId: string, report: { configVersion?: number; shownImageId?: string | null }) {
    stats.delivered += await repo.markReported(deviceId, report)
  }

  async function polled(deviceId: string, carried: PollCarried) {
    stats.delivered += await repo.markPolled(deviceId, carried)
  }

  return {
    publish,
    stage,
    stageAll,
    kick: (deviceId, reason) => transport.kick(deviceId, reason),
    credentialsIssued: async (deviceId, secret) => transport.credentialsIssued?.(deviceId, secret),
    credentialsRevoked: async (deviceId) => transport.credentialsRevoked?.(deviceId),
    // Live state is not a message to the device: it goes straight to the transport, unstored.
    announce: async (deviceId, state, event) => transport.announce?.(deviceId, state, event),
    delivered,
    reported,
    polled,
    pollStarts: (deviceId) => repo.lastSeqOf(deviceId),
    resend,
    mayHavePending: (deviceId) => index.mayHave(deviceId),
    expectResend,
    sweep,
    stats,
    async settled() {
      await acks.flush().catch(() => {})
    },
  }
}
