// The outbox's resend rules without the app: what a new session is sent (and what it is not: held
// by the transport, before a resumed session's mark, other kinds, acknowledged, sent live, too old
// by the injected clock), that a message published while a resend runs goes out once, and what the
// sweep drops. The repository is an in-memory stand-in typed by the real one (OutboxRepository);
// test/downlink/outbox.test.ts runs these paths over a database and a broker.
import t from 'tap'
import { createOutbox, type OutboxRepository, type OutboxLimits, type ResendOptions, toResend } from '../../src/downlink/outbox.js'
import type { StoredMessage } from '../../src/downlink/repository.js'

const limits: OutboxLimits = { maxPerDevice: 100, maxAgeMs: 3_600_000, keepDeliveredMs: 86_400_000 }
const T0 = Date.parse('2026-11-28T10:00:00Z')

type Row = StoredMessage & { status: 'pending' | 'delivered'; createdAt: number }

/**
 * Messages numbered per device, pending until acknowledged; what the outbox's rules read. Not the
 * repository's supersession or bounds (its own SQL, tested over a database in outbox.test.ts).
 * `hold` makes the next recording wait once stored, to put a resend between a publish's store and
 * its hand-over.
 */
function memoryRepo(clock: () => number) {
  const rows: Row[] = []
  const events: { type: string; deviceId: string; data: Record<string, unknown> }[] = []
  const pruned: { limit: number; before: Date; deliveredBefore: Date }[] = []
  let hold: Promise<void> | undefined
  const record: OutboxRepository['recordMessages'] = async (messages) => {
    const seqs = messages.map((m) => {
      const seq = rows.filter((r) => r.deviceId === m.deviceId).length + 1
      rows.push({ deviceId: m.deviceId, seq, kind: m.kind, payload: m.payload, retain: m.retain, status: 'pending', createdAt: clock() })
      return seq
    })
    const wait = hold
    hold = undefined
    await wait
    return seqs
  }
  const repo: OutboxRepository = {
    recordMessages: record,
    recordMessagesIn: (_tx, messages) => record(messages),
    markDelivered: async (acks) =>
      acks.flatMap((a) => {
        const r = rows.find((m) => m.deviceId === a.deviceId && m.seq === a.seq && m.status === 'pending')
        if (!r) return []
        r.status = 'delivered'
        return [{ deviceId: r.deviceId, seq: r.seq, kind: r.kind }]
      }),
    pendingMessages: async (ids, limit, since) =>
      rows
        .filter((r) => ids.includes(r.deviceId) && r.status === 'pending' && r.createdAt >= since.getTime())
        .slice(-limit)
        .map(({ deviceId, seq, kind, payload, retain }) => ({ deviceId, seq, kind, payload, retain })),
    pruneMessages: async (opts) => {
      pruned.push(opts)
      return { limit: [], expired: [{ deviceId: 'dev1', userId: 'u1', organizationId: null, count: 2, firstSeq: 1, lastSeq: 2 }] }
    },
    markReported: async () => 0,
    markPolled: async () => 0,
    lastSeqOf: async (deviceId) => rows.filter((r) => r.deviceId === deviceId).length,
    insertEvents: async (evs) => {
      for (const e of evs) events.push({ type: e.type, deviceId: e.deviceId ?? '', data: e.data ?? {} })
      return []
    },
  }
  return {
    repo,
    rows,
    events,
    pruned,
    holdNextRecord() {
      let release!: () => void
      hold = new Promise((r) => {
        release = r
      })
      return release
    },
  }
}

function setup() {
  let now = T0
  const mem = memoryRepo(() => now)
  const sent: { seq: number; kind: string; retain: boolean }[] = []
  // A gate holds publishes once recorded as sent (a slow connection), to keep a resend running.
  let gate: Promise<void> | undefined
  const transport = {
    publish: async (_id: string, kind: string, payload: object, opts?: { retain?: boolean }) => {
      sent.push({ seq: (payload as { seq: number }).seq, kind, retain: opts?.retain ?? false })
      await gate
    },
    kick: async () => true,
  }
  const gatePublish = () => {
    let release!: () => void
    gate = new Promise((r) => {
      release = r
    })
    return () => {
      gate = undefined
      release()
    }
  }
  const outbox = createOutbox({ repo: mem.repo, transport, limits, log: { warn: () => {} }, now: () => now })
  const seqs = () => sent.map((s) => s.seq)
  return { ...mem, outbox, sent, seqs, gatePublish, advance: (ms: number) => void (now += ms) }
}

const msg = (seq: number, kind = 'cmd'): StoredMessage => ({ deviceId: 'dev1', seq, kind, payload: {}, retain: false })

t.test('toResend: leaves out what the transport holds, what a resumed session has, other kinds, and live sends', async (t) => {
  const rows = [msg(1, 'config'), msg(2), msg(3, 'image'), msg(4), msg(5, 'prompt')]
  const seqs = (opts: ResendOptions, live: number[] = []) => toResend(rows, opts, new Set(live)).map((m) => m.seq)
  t.same(seqs({}), [1, 2, 3, 4, 5], 'everything pending, in order')
  t.same(seqs({ holding: new Set([2, 4]) }), [1, 3, 5])
  t.same(seqs({ after: 3 }), [4, 5], 'after is exclusive of the mark itself')
  t.same(seqs({ after: 0 }), [1, 2, 3, 4, 5])
  t.same(seqs({ kinds: new Set(['cmd', 'config']) }), [1, 2, 4])
  t.same(seqs({}, [1, 5]), [2, 3, 4])
  t.same(seqs({ holding: new Set([1]), after: 1, kinds: new Set(['cmd', 'image']) }, [4]), [2, 3], 'all at once')
})

t.test('a new session is sent what it has not acknowledged, oldest first, with the seq and retain flag', async (t) => {
  const { outbox, sent, seqs } = setup()
  await outbox.publish('dev1', 'config', { v: 1 }, { retain: true })
  await outbox.publish('dev1', 'cmd', { c: 1 })
  await outbox.publish('dev1', 'image', { i: 1 })
  t.same(seqs(), [1, 2, 3], 'published live')
  sent.length = 0
  t.equal(await outbox.resend('dev1'), 3)
  t.same(sent, [
    { seq: 1, kind: 'config', retain: true },
    { seq: 2, kind: 'cmd', retain: false },
    { seq: 3, kind: 'image', retain: false },
  ])
  t.equal(outbox.stats.resent, 3)
  t.equal(outbox.stats.recorded, 3)
})

t.test('an acknowledgement received just before the resend is written first, so it is not sent again', async (t) => {
  const { outbox, sent, seqs } = setup()
  await outbox.publish('dev1', 'cmd', { c: 1 })
  await outbox.publish('dev1', 'cmd', { c: 2 })
  sent.length = 0
  // Still inside the acknowledgement window (50 ms): the resend must not read before it is written.
  const ack = outbox.delivered('dev1', 1)
  t.equal(await outbox.resend('dev1'), 1)
  t.same(seqs(), [2])
  t.equal(await ack, 'cmd')
  // The window's timer does not hold the process open (unref): settled() writes it now.
  const unknown = outbox.delivered('dev1', 99)
  await outbox.settled()
  t.equal(await unknown, undefined, 'an unknown seq')
})

t.test('the resend options reach the read: holding, after and kinds', async (t) => {
  const { outbox, sent, seqs } = setup()
  for (const kind of ['config', 'cmd', 'image', 'cmd'] as const) await outbox.publish('dev1', kind, {})
  sent.length = 0
  t.equal(await outbox.resend('dev1', { holding: new Set([2]), after: 1, kinds: new Set(['cmd', 'image']) }), 2)
  t.same(seqs(), [3, 4])
})

t.test('pending messages older than the limit by the clock are not sent', async (t) => {
  const { outbox, sent, seqs, advance } = setup()
  await outbox.publish('dev1', 'cmd', { old: true })
  advance(limits.maxAgeMs - 1000)
  await outbox.publish('dev1', 'cmd', { young: true })
  sent.length = 0
  t.equal(await outbox.resend('dev1'), 2, 'both within the limit')
  advance(1000)
  sent.length = 0
  t.equal(await outbox.resend('dev1'), 2, 'the first exactly at the limit: still sent')
  advance(1)
  sent.length = 0
  t.equal(await outbox.resend('dev1'), 1)
  t.same(seqs(), [2], 'the first, a millisecond past the limit, is not')
})

t.test('a message published live after the device subscribed, before its resend, is not resent', async (t) => {
  const { outbox, sent, seqs } = setup()
  await outbox.publish('dev1', 'cmd', { before: true })
  sent.length = 0
  outbox.expectResend('dev1', true)
  await outbox.publish('dev1', 'cmd', { live: true })
  t.same(seqs(), [2], 'sent live')
  sent.length = 0
  t.equal(await outbox.resend('dev1'), 1)
  t.same(seqs(), [1], 'the resend sends the rest')

  // A resend that will not come (the connection closed first) leaves nothing behind: what was
  // sent live to the closed connection goes to the next session.
  outbox.expectResend('dev1', true)
  await outbox.publish('dev1', 'cmd', { toClosed: true })
  outbox.expectResend('dev1', false)
  sent.length = 0
  t.equal(await outbox.resend('dev1'), 3)
  t.same(seqs(), [1, 2, 3], 'the next session gets all three')
})

t.test('a message stored before a resend read it and handed over after is sent once, by the resend', async (t) => {
  const { outbox, sent, seqs, holdNextRecord } = setup()
  const release = holdNextRecord()
  const publishing = outbox.publish('dev1', 'cmd', { racing: true })
  // The publish's message is stored; its hand-over waits. The resend reads and sends it meanwhile.
  await new Promise((r) => setImmediate(r))
  t.equal(await outbox.resend('dev1'), 1)
  t.same(seqs(), [1])
  // The resend is over, but the publish is still on its way: it must learn that the resend sent it.
  release()
  await publishing
  t.same(seqs(), [1], 'not sent a second time')
  t.equal(sent.length, 1)

  // Its record went with the publish: a later message is published live as usual.
  await outbox.publish('dev1', 'cmd', { after: true })
  t.same(seqs(), [1, 2])
})

t.test('a staged message whose send() comes while a resend that sent it still runs goes out once', async (t) => {
  const { outbox, seqs, gatePublish } = setup()
  // The stand-in ignores the transaction: what is checked is the outbox's bookkeeping around it.
  const staged = await outbox.stage(undefined as never, 'dev1', 'cmd', { staged: true })
  const release = gatePublish()
  const resending = outbox.resend('dev1')
  while (seqs().length === 0) await new Promise((r) => setImmediate(r))
  await staged.send()
  release()
  t.equal(await resending, 1, 'read after the commit, the resend sent it')
  t.same(seqs(), [1], 'and send() knew')
})

t.test('the sweep drops by the clock and records a downlink_dropped event per run', async (t) => {
  const { outbox, pruned, events, advance } = setup()
  advance(5000)
  t.equal(await outbox.sweep(), 2)
  t.same(pruned, [
    {
      limit: limits.maxPerDevice,
      before: new Date(T0 + 5000 - limits.maxAgeMs),
      deliveredBefore: new Date(T0 + 5000 - limits.keepDeliveredMs),
    },
  ])
  t.same(events, [{ type: 'device.downlink_dropped', deviceId: 'dev1', data: { reason: 'expired', count: 2, firstSeq: 1, lastSeq: 2 } }])
  t.equal(outbox.stats.dropped, 2)
})
