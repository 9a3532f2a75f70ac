// The outbox's statements read a device's messages through the primary key, whatever the table
// holds: a plan that scans device_message made every config staged at pairing cost a pass over
// all devices' messages (172 ms at 300,000 rows, the bench's pairing after its outbox scenario).
// Checked on the plan itself (EXPLAIN, after ANALYZE of a table of many devices' messages), on
// the embedded database and on PostgreSQL alike.
import t from 'tap'
import { sql, type SQL } from 'drizzle-orm'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { rowsOf } from '../../src/db/client.js'
import { recordStatement } from '../../src/downlink/repository.js'

const DEVICES = 1000
const PER_DEVICE = 30

t.test("recording a device's config reads its own messages, not the whole table", async (t) => {
  const svc = await startApp(t)
  const db = svc.app.database.db
  const { userId } = await signUp(makeClient(svc.url).client, uniqueEmail('plan'))
  await db.execute(
    sql.raw(`insert into device (id, name, user_id, pin_code, display, created_at, updated_at)
      select 'plan-' || g, 'frame', '${userId}', 'pin-' || g, '{"width":800,"height":480,"palette":"bw"}'::jsonb, now(), now()
      from generate_series(1, ${DEVICES}) g`),
  )
  await db.execute(
    sql.raw(`insert into device_downlink (device_id, last_seq) select 'plan-' || g, ${PER_DEVICE} from generate_series(1, ${DEVICES}) g`),
  )
  await db.execute(
    sql.raw(`insert into device_message (device_id, seq, kind, payload, status, delivered_at)
      select 'plan-' || (g % ${DEVICES} + 1), g / ${DEVICES} + 1, 'cmd', '{"n":1}'::jsonb, 'delivered', now()
      from generate_series(0, ${DEVICES * PER_DEVICE - 1}) g`),
  )
  await db.execute(sql`analyze device_message`)
  await db.execute(sql`analyze device`)
  await db.execute(sql`analyze device_downlink`)

  const plan = async (statement: SQL) => {
    const rows = rowsOf<Record<string, string>>(await db.execute(sql`explain ${statement}`))
    return rows.map((r) => Object.values(r)[0]).join('\n')
  }
  const config = recordStatement([{ deviceId: 'plan-7', kind: 'config', payload: { version: 2 }, retain: true, replacesOlder: true }])
  const text = await plan(config)
  t.notMatch(text, /Seq Scan on device_message/, "no pass over every device's messages", { plan: text })
  t.notMatch(text, /Seq Scan on device\b/, 'no pass over every device', { plan: text })
  t.match(text, /device_message_device_id_seq_pk/, "the device's messages are read by key", { plan: text })
})
