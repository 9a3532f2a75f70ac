// Which devices may have pending messages (src/downlink/pending-index.ts), and the outbox skipping
// the resend query for a device known to have none only where it is the only writer. A device it
// forgets while a message to it is on its way into the database would lose that message at its next
// session start: each way that could happen is checked. The restart tests (restart-*.test.ts) run
// the index over a real database: what was pending before a restart is resent after it.
import t from 'tap'
import { createOutbox, type OutboxRepository } from '../../src/downlink/outbox.js'
import { pendingIndex } from '../../src/downlink/pending-index.js'
import type { StoredMessage } from '../../src/downlink/repository.js'

const log = { warn: () => {} }
const settle = () => new Promise((r) => setImmediate(r))

t.test('the index: loaded devices, recordings, reads that found none', async (t) => {
  let answer!: (ids: string[]) => void
  const index = pendingIndex(() => new Promise((r) => (answer = r)), log)
  t.equal(index.mayHave('idle'), true, 'before the list is read, every device may have some')
  index.foundNone('idle', index.reading())
  t.equal(index.mayHave('idle'), true, 'and a read before it cannot forget one')
  answer(['queued'])
  await settle()
  t.equal(index.mayHave('queued'), true, 'a device listed at start')
  t.equal(index.mayHave('idle'), false, 'a device not listed')

  const rec = index.recording('idle')
  t.equal(index.mayHave('idle'), true, 'a recording adds the device before it is stored')
  index.foundNone('idle', index.reading())
  t.equal(index.mayHave('idle'), true, 'a read that found none while the recording is open does not forget it')
  const token = index.reading()
  rec.done()
  index.foundNone('idle', token)
  t.equal(index.mayHave('idle'), true, 'nor one that began before the recording ended (it may have read before the commit)')
  index.foundNone('idle', index.reading())
  t.equal(index.mayHave('idle'), false, 'a read begun after the recording ended and finding none forgets it')

  const early = index.reading()
  index.recording('queued').done()
  index.foundNone('queued', early)
  t.equal(index.mayHave('queued'), true, 'a recording that began and ended during a read keeps the device')
  index.foundNone('queued', index.reading())
  t.equal(index.mayHave('queued'), false)
})

t.test('the index: a list that could not be read leaves every device possible', async (t) => {
  const index = pendingIndex(() => Promise.reject(new Error('down')), log)
  await settle()
  index.foundNone('a', index.reading())
  t.equal(index.mayHave('a'), true)
})

/** A repository stand-in that counts the resend's reads. */
function countingRepo(atStart: string[]) {
  const rows: Array<StoredMessage & { pending: boolean }> = []
  for (const deviceId of atStart) rows.push({ deviceId, seq: 1, kind: 'cmd', payload: { n: 0 }, retain: false, pending: true })
  let reads = 0
  const record: OutboxRepository['recordMessages'] = async (messages) =>
    messages.map((m) => {
      const seq = rows.filter((r) => r.deviceId === m.deviceId).length + 1
      rows.push({ deviceId: m.deviceId, seq, kind: m.kind, payload: m.payload, retain: m.retain, pending: true })
      return seq
    })
  const repo: OutboxRepository = {
    recordMessages: record,
    recordMessagesIn: (_tx, messages) => record(messages),
    markDelivered: async () => [],
    pendingMessages: async (ids) => {
      reads += 1
      return rows.filter((r) => ids.includes(r.deviceId) && r.pending).map(({ pending: _, ...m }) => m)
    },
    pendingDevices: async () => [...new Set(rows.filter((r) => r.pending).map((r) => r.deviceId))],
    pruneMessages: async () => ({ limit: [], expired: [] }),
    markReported: async () => 0,
    markPolled: async () => 0,
    lastSeqOf: async () => 0,
    insertEvents: async () => [],
  }
  return { repo, reads: () => reads }
}

function outboxOver(repo: OutboxRepository, soleWriter: boolean) {
  const sent: Array<{ deviceId: string; seq: number }> = []
  const outbox = createOutbox({
    repo,
    transport: {
      publish: async (deviceId, _kind, payload) => {
        sent.push({ deviceId, seq: (payload as { seq: number }).seq })
      },
      kick: async () => false,
    },
    limits: { maxPerDevice: 100, maxAgeMs: 3_600_000, keepDeliveredMs: 86_400_000 },
    log,
    soleWriter,
  })
  return { outbox, sent }
}

t.test('the only writer: no query for a device with nothing pending, every pending message still resent', async (t) => {
  const { repo, reads } = countingRepo(['asleep'])
  const { outbox, sent } = outboxOver(repo, true)
  await settle()

  t.equal(outbox.mayHavePending('fresh'), false)
  t.equal(await outbox.resend('fresh'), 0)
  t.equal(reads(), 0, 'a device with nothing pending costs no query')

  t.equal(outbox.mayHavePending('asleep'), true, 'pending before the start')
  t.equal(await outbox.resend('asleep'), 1)
  t.same(sent, [{ deviceId: 'asleep', seq: 1 }], 'what was pending at start is resent')
  t.equal(reads(), 1)

  await outbox.publish('fresh', 'cmd', { n: 1 })
  t.equal(outbox.mayHavePending('fresh'), true, 'a message recorded since')
  sent.length = 0
  t.equal(await outbox.resend('fresh'), 1, 'resent (nothing acknowledged it)')
  t.same(sent, [{ deviceId: 'fresh', seq: 1 }])
  t.equal(reads(), 2)
})

t.test('not the only writer (a cluster, an external broker): every session start asks', async (t) => {
  const { repo, reads } = countingRepo([])
  const { outbox } = outboxOver(repo, false)
  await settle()
  t.equal(outbox.mayHavePending('fresh'), true)
  t.equal(await outbox.resend('fresh'), 0)
  t.equal(reads(), 1)
})
