// The outbox's two busiest statements on their own, on the embedded database and on PostgreSQL
// alike: numbering a batch (each device's messages in input order, after what it had; a kind
// that replaces older ones supersedes them, in the batch and before it; a device that does not
// exist gets nothing) and marking acknowledgements (the kind of every message that exists,
// whether this acknowledgement or an earlier one delivered it).
import t from 'tap'
import { sql } from 'drizzle-orm'
import { rowsOf } from '../../src/db/client.js'
import { markDelivered, recordMessages, type NewMessage } from '../../src/downlink/repository.js'
import { testDatabase } from '../helpers/app.js'

const message = (deviceId: string, kind: string, payload: Record<string, unknown>): NewMessage => ({
  deviceId,
  kind,
  payload,
  retain: false,
  replacesOlder: kind === 'config' || kind === 'image',
})

async function setup(t: Parameters<typeof testDatabase>[0]) {
  const { db } = await testDatabase(t)
  await db.execute(sql`insert into "user" (id, name, email) values ('u1', 'Owner', 'owner@example.com')`)
  for (const id of ['dev-a', 'dev-b'])
    await db.execute(sql`insert into device (id, name, user_id, pin_code, display, created_at, updated_at)
      values (${id}, 'frame', 'u1', ${`pin-${id}`}, '{"width":800,"height":480,"palette":"bw"}'::jsonb, now(), now())`)
  const statuses = async (deviceId: string) =>
    rowsOf<{ seq: string | number; kind: string; status: string }>(
      await db.execute(sql`select seq, kind, status from device_message where device_id = ${deviceId} order by seq`),
    ).map((r) => `${Number(r.seq)}:${r.kind}:${r.status}`)
  return { db, statuses }
}

t.test("a batch is numbered per device in input order, after the device's earlier messages", async (t) => {
  const { db, statuses } = await setup(t)
  t.same(await recordMessages(db, [message('dev-a', 'config', { version: 1 }), message('dev-a', 'cmd', { n: 0 })]), [1, 2])
  const seqs = await recordMessages(db, [
    message('dev-a', 'cmd', { n: 1 }),
    message('dev-b', 'cmd', { n: 1 }),
    message('dev-a', 'image', { imageId: 'i1' }),
    message('nobody', 'cmd', { n: 1 }),
    message('dev-a', 'config', { version: 2 }),
    message('dev-b', 'config', { version: 1 }),
    message('dev-a', 'image', { imageId: 'i2' }),
    message('dev-a', 'config', { version: 3 }),
  ])
  t.same(seqs, [3, 1, 4, undefined, 5, 2, 6, 7], 'each device counts on from its last seq; a missing device gets none')
  t.same(
    await statuses('dev-a'),
    [
      '1:config:superseded',
      '2:cmd:pending',
      '3:cmd:pending',
      '4:image:superseded',
      '5:config:superseded',
      '6:image:pending',
      '7:config:pending',
    ],
    'only the newest config and image stay pending, whether the older one came in this batch or before',
  )
  t.same(await statuses('dev-b'), ['1:cmd:pending', '2:config:pending'], "another device's messages are its own")
  const payloads = rowsOf<{ payload: Record<string, unknown> | string }>(
    await db.execute(sql`select payload from device_message where device_id = 'dev-a' and seq = 6`),
  ).map((r) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload))
  t.same(payloads, [{ imageId: 'i2' }], 'each row holds its own message')
})

t.test('acknowledgements: the kind of every message that exists, however it was delivered', async (t) => {
  const { db, statuses } = await setup(t)
  await recordMessages(db, [message('dev-a', 'cmd', { n: 1 }), message('dev-a', 'prompt', { n: 2 }), message('dev-b', 'cmd', { n: 1 })])
  const first = await markDelivered(db, [
    { deviceId: 'dev-a', seq: 1 },
    { deviceId: 'dev-b', seq: 1 },
    { deviceId: 'dev-a', seq: 9 },
  ])
  t.same(
    first.map((r) => `${r.deviceId}:${r.seq}:${r.kind}`).sort(),
    ['dev-a:1:cmd', 'dev-b:1:cmd'],
    'the pending ones, and nothing for a seq never sent',
  )
  const again = await markDelivered(db, [
    { deviceId: 'dev-a', seq: 1 },
    { deviceId: 'dev-a', seq: 2 },
    { deviceId: 'nobody', seq: 1 },
  ])
  t.same(
    again.map((r) => `${r.deviceId}:${r.seq}:${r.kind}`).sort(),
    ['dev-a:1:cmd', 'dev-a:2:prompt'],
    'one delivered before (its PUBACK came first) is still named, beside a pending one',
  )
  t.same(await statuses('dev-a'), ['1:cmd:delivered', '2:prompt:delivered'])
  t.same(await statuses('dev-b'), ['1:cmd:delivered'])
})
