// The only module that reads or writes device_message and device_downlink rows.
import { eq, sql } from 'drizzle-orm'
import { rowsOf, type Executor } from '../db/client.js'
import { device } from '../devices/tables.js'
import { deviceDownlink, deviceMessage } from './tables.js'

export type NewMessage = { deviceId: string; kind: string; payload: Record<string, unknown>; retain: boolean; replacesOlder: boolean }
export type StoredMessage = { deviceId: string; seq: number; kind: string; payload: Record<string, unknown>; retain: boolean }

const isForeignKeyViolation = (err: unknown) => {
  const e = err as { code?: string; cause?: { code?: string } }
  return e?.code === '23503' || e?.cause?.code === '23503'
}

/**
 * Numbers and stores messages, in input order per device, in one statement: the batch travels as
 * JSON parameters (a statement per message, or one parameter per field, cost the embedded
 * database more than the rows themselves). Each device's counter moves first (upserted in id
 * order, so two instances writing overlapping batches cannot deadlock), then the rows go in; a
 * kind that replaces older messages supersedes the pending ones before it, in this batch and
 * before. Returns each message's seq, or undefined when its device does not exist.
 */
export async function recordMessages(db: Executor, messages: readonly NewMessage[]): Promise<Array<number | undefined>> {
  if (!messages.length) return []
  const statement = recordStatement(messages)
  // Inside the caller's transaction the statement runs under a savepoint: a failed statement
  // aborts a PostgreSQL transaction, and the retry below needs it still usable.
  const inTransaction = typeof (db as { rollback?: unknown }).rollback === 'function'
  const attempt = () => (inTransaction ? db.transaction((savepoint) => savepoint.execute(statement)) : db.execute(statement))
  let result: unknown
  try {
    result = await attempt()
  } catch (err) {
    // A device deleted between the join and the insert: once more, without it.
    if (!isForeignKeyViolation(err)) throw err
    result = await attempt()
  }
  const seqs: Array<number | undefined> = messages.map(() => undefined)
  for (const r of rowsOf<{ o: number; seq: string | number }>(result)) seqs[Number(r.o)] = Number(r.seq)
  return seqs
}

/**
 * recordMessages' one statement (exported for the test that reads its plan). What needs no table
 * is worked out here rather than in SQL: each message's place among its device's messages in the
 * batch, the count per device, and which ones a later message of the batch replaces. Numbering
 * them in SQL (a window function, a count per device, a search of the batch per message) cost
 * the embedded database as much as storing the rows (docs/benchmarks.md, "The durable downlink's
 * cost").
 */
export function recordStatement(messages: readonly NewMessage[]) {
  const counts = new Map<string, number>()
  const lastOfKind = new Map<string, number>()
  messages.forEach((m, o) => {
    counts.set(m.deviceId, (counts.get(m.deviceId) ?? 0) + 1)
    if (m.replacesOlder) lastOfKind.set(`${m.deviceId}\0${m.kind}`, o)
  })
  const place = new Map<string, number>()
  const batch = JSON.stringify(
    messages.map((m, o) => {
      const r = (place.get(m.deviceId) ?? 0) + 1
      place.set(m.deviceId, r)
      const replaced = m.replacesOlder && lastOfKind.get(`${m.deviceId}\0${m.kind}`) !== o
      return { o, d: m.deviceId, r, k: m.kind, p: m.payload, t: m.retain, s: replaced ? 'superseded' : 'pending' }
    }),
  )
  const perDevice = JSON.stringify([...counts].map(([d, n]) => ({ d, n })))
  const replacing = [...lastOfKind.keys()].map((key) => {
    const [d, k] = key.split('\0')
    return { d, k }
  })
  // Older pending messages of a kind this batch replaces. The devices as an array: the planner
  // cannot size a JSON recordset, and for a join it chose a scan of the whole table (every
  // device's messages, delivered ones included: 172 ms for one config at 300,000 rows); = any(array)
  // reads the batch's devices' rows through the primary key (0.13 ms).
  const supersede = replacing.length
    ? sql`, superseded as (
      update ${deviceMessage} as m set status = 'superseded'
      where m.device_id = any(array(select d from jsonb_to_recordset(${JSON.stringify(replacing)}::jsonb) as x(d text)))
        and (m.device_id, m.kind) in (select d, k from jsonb_to_recordset(${JSON.stringify(replacing)}::jsonb) as x(d text, k text))
        and m.status = 'pending')`
    : sql``
  return sql`
    with c as (select * from jsonb_to_recordset(${perDevice}::jsonb) as c(d text, n bigint)),
    bumped as (
      -- As an array too, so the device table is read by key, not scanned whole.
      insert into ${deviceDownlink} (device_id, last_seq)
      select c.d, c.n from c join ${device} on ${device.id} = c.d where ${device.id} = any(array(select d from c)) order by c.d
      on conflict (device_id) do update set last_seq = ${deviceDownlink}.last_seq + excluded.last_seq
      returning device_id, last_seq),
    numbered as (
      select v.o, v.d, b.last_seq - c.n + v.r as seq, v.k, v.p, v.t, v.s
      from jsonb_to_recordset(${batch}::jsonb) as v(o int, d text, r bigint, k text, p jsonb, t bool, s text)
      join c on c.d = v.d join bumped b on b.device_id = v.d),
    inserted as (
      insert into ${deviceMessage} (device_id, seq, kind, payload, retain, status) select d, seq, k, p, t, s from numbered)
    ${supersede}
    select o, seq from numbered`
}

/**
 * Marks messages delivered (the device acknowledged them), and says which of them exist, whatever
 * their status (a PUBACK may have delivered one before its up/ack came), so an up/ack can tell a
 * real message from a made-up one. Nearly every acknowledgement is of a pending message: the
 * update says which it changed, and only the others are looked up, by a second statement (one
 * statement reading every acknowledged row again cost a third of the acknowledgement's write).
 */
export async function markDelivered(
  db: Executor,
  acks: ReadonlyArray<{ deviceId: string; seq: number }>,
): Promise<Array<{ deviceId: string; seq: number; kind: string }>> {
  if (!acks.length) return []
  const read = (rows: unknown) =>
    rowsOf<{ device_id: string; seq: string | number; kind: string }>(rows).map((r) => ({
      deviceId: r.device_id,
      seq: Number(r.seq),
      kind: r.kind,
    }))
  const delivered = read(
    await db.execute(sql`
      update ${deviceMessage} as m set status = 'delivered', delivered_at = now()
      from jsonb_to_recordset(${JSON.stringify(acks.map((a) => ({ d: a.deviceId, s: a.seq })))}::jsonb) as a(d text, s bigint)
      where m.device_id = a.d and m.seq = a.s and m.status = 'pending'
      returning m.device_id, m.seq, m.kind`),
  )
  const changed = new Set(delivered.map((r) => `${r.deviceId}:${r.seq}`))
  const others = acks.filter((a) => !changed.has(`${a.deviceId}:${a.seq}`))
  if (!others.length) return delivered
  const found = read(
    await db.execute(sql`
      select m.device_id, m.seq, m.kind from ${deviceMessage} m
      join jsonb_to_recordset(${JSON.stringify(others.map((a) => ({ d: a.deviceId, s: a.seq })))}::jsonb) as a(d text, s bigint)
        on m.device_id = a.d and m.seq = a.s`),
  )
  return [...delivered, ...found]
}

/**
 * A device reported what it applies (up/status): the pending config of that version or older,
 * and the pending image it shows, have arrived, whether or not their acknowledgement did (a
 * retained config reaches a new subscriber without one the broker can match).
 */
export async function markReported(
  db: Executor,
  deviceId: string,
  report: { configVersion?: number; shownImageId?: string | null },
): Promise<number> {
  const conditions = [
    ...(Number.isSafeInteger(report.configVersion)
      ? [sql`(m.kind = 'config' and (m.payload->>'version')::bigint <= ${report.configVersion})`]
      : []),
    ...(report.shownImageId ? [sql`(m.kind = 'image' and m.payload->>'imageId' = ${report.shownImageId})`] : []),
  ]
  if (!conditions.length) return 0
  const rows = await db.execute(sql`
    update ${deviceMessage} as m set status = 'delivered', delivered_at = now()
    where m.device_id = ${deviceId} and m.status = 'pending' and (${sql.join(conditions, sql` or `)})
    returning m.seq`)
  return rowsOf(rows).length
}

/** The last seq handed out to a device (0 before its first message). */
export async function lastSeqOf(db: Executor, deviceId: string): Promise<number> {
  const [row] = await db.select({ lastSeq: deviceDownlink.lastSeq }).from(deviceDownlink).where(eq(deviceDownlink.deviceId, deviceId))
  return row?.lastSeq ?? 0
}

/** What a polling device's answer carried: see markPolled. */
export type PollCarried = {
  /** The device's last seq when the poll began: messages recorded while it ran are not part of its answer. */
  upTo: number
  /** The command the answer carried out, if any (one per poll). */
  commandId?: string
  /** Whether the answer offered firmware (update_firmware): it carries an offer, or else the withdrawal of one. */
  firmware: boolean
  /** The image the answer's image_url names, if it names one (not a screen the service draws). */
  imageId?: string
}

/**
 * A polling device (TRMNL) was answered: its answer was computed from the device's current
 * config and plan (which every earlier config and prompt message led to), one command, the
 * firmware offer when it made one (its withdrawal when it made none), and the image it named, so
 * those messages are delivered by it: the frame draws a named file it already has without
 * fetching it again (a rotation coming back to a picture), so waiting for the download would
 * leave that image pending. Such a device has no other way to acknowledge: its messages would
 * otherwise age out as drops that mean nothing.
 */
export async function markPolled(db: Executor, deviceId: string, carried: PollCarried): Promise<number> {
  const rows = await db.execute(sql`
    update ${deviceMessage} as m set status = 'delivered', delivered_at = now()
    where m.device_id = ${deviceId} and m.status = 'pending' and m.seq <= ${carried.upTo}
      and (m.kind in ('prompt', 'config')
        or (m.kind = 'cmd' and m.payload->>'commandId' = ${carried.commandId ?? null})
        or (m.kind = 'image' and m.payload->>'imageId' = ${carried.imageId ?? null})
        or (m.kind = 'ota' and (m.payload->>'version' is not null) = ${carried.firmware}))
    returning m.seq`)
  return rowsOf(rows).length
}

/**
 * What several devices have not acknowledged, oldest first, within the bound: at most `limit`
 * per device (its newest `limit` seqs) and nothing older than `since`. One query for a batch of
 * devices, since a fleet reconnecting after a restart starts thousands of sessions at once.
 */
/** The devices that have pending messages (read once, at start: see pending-index.ts). */
export async function pendingDevices(db: Executor): Promise<string[]> {
  const rows = await db.execute(sql`select distinct device_id from ${deviceMessage} where status = 'pending'`)
  return rowsOf<{ device_id: string }>(rows).map((r) => r.device_id)
}

export async function pendingMessages(db: Executor, deviceIds: readonly string[], limit: number, since: Date): Promise<StoredMessage[]> {
  if (!deviceIds.length) return []
  // One JSON parameter: the same statement text for any number of devices (prepared once per connection).
  const ids = JSON.stringify([...new Set(deviceIds)])
  const rows = await db.execute(sql`
    select m.device_id, m.seq, m.kind, m.payload, m.retain
    from jsonb_array_elements_text(${ids}::jsonb) as v(id)
    join ${deviceDownlink} dl on dl.device_id = v.id
    join ${deviceMessage} m on m.device_id = dl.device_id and m.seq > dl.last_seq - ${limit}
    -- As an array too, so device_downlink is read by key, not scanned whole (see recordMessages).
    where dl.device_id = any(array(select jsonb_array_elements_text(${ids}::jsonb)))
      and m.status = 'pending' and m.created_at > ${since.toISOString()}::timestamptz
    order by m.device_id, m.seq`)
  return rowsOf<{ device_id: string; seq: string | number; kind: string; payload: Record<string, unknown> | string; retain: boolean }>(
    rows,
  ).map((r) => ({
    deviceId: r.device_id,
    seq: Number(r.seq),
    kind: r.kind,
    payload: typeof r.payload === 'string' ? (JSON.parse(r.payload) as Record<string, unknown>) : r.payload,
    retain: Boolean(r.retain),
  }))
}

export type DroppedRun = {
  deviceId: string
  userId: string
  organizationId: string | null
  count: number
  firstSeq: number
  lastSeq: number
}

/**
 * Enforces the bound: pending messages beyond the newest `limit` of a device, or older than
 * `before`, are deleted and reported per device (each run becomes an Event); superseded
 * messages, and delivered ones older than `deliveredBefore`, are deleted silently.
 */
export async function pruneMessages(
  db: Executor,
  opts: { limit: number; before: Date; deliveredBefore: Date },
): Promise<{ limit: DroppedRun[]; expired: DroppedRun[] }> {
  await db.execute(
    sql`delete from ${deviceMessage} where status = 'superseded' or (status = 'delivered' and created_at < ${opts.deliveredBefore.toISOString()}::timestamptz)`,
  )
  const summarise = (result: unknown): DroppedRun[] =>
    rowsOf<{
      device_id: string
      user_id: string
      organization_id: string | null
      n: string | number
      first: string | number
      last: string | number
    }>(result).map((r) => ({
      deviceId: r.device_id,
      userId: r.user_id,
      organizationId: r.organization_id,
      count: Number(r.n),
      firstSeq: Number(r.first),
      lastSeq: Number(r.last),
    }))
  const limit = summarise(
    await db.execute(sql`
      with gone as (
        delete from ${deviceMessage} as m using ${deviceDownlink} as dl
        where m.device_id = dl.device_id and m.status = 'pending' and m.seq <= dl.last_seq - ${opts.limit}
        returning m.device_id, m.seq
      )
      select g.device_id, d.user_id, d.organization_id, count(*) as n, min(g.seq) as first, max(g.seq) as last
      from gone g join ${device} d on d.id = g.device_id group by g.device_id, d.user_id, d.organization_id`),
  )
  const expired = summarise(
    await db.execute(sql`
      with gone as (
        delete from ${deviceMessage} where status = 'pending' and created_at < ${opts.before.toISOString()}::timestamptz
        returning device_id, seq
      )
      select g.device_id, d.user_id, d.organization_id, count(*) as n, min(g.seq) as first, max(g.seq) as last
      from gone g join ${device} d on d.id = g.device_id group by g.device_id, d.user_id, d.organization_id`),
  )
  return { limit, expired }
}

/** A device's messages, newest first (for the API and tests). */
export async function listMessages(db: Executor, deviceId: string, limit: number, beforeSeq?: number) {
  const rows = await db.execute(sql`
    select seq, kind, status, created_at, delivered_at from ${deviceMessage}
    where device_id = ${deviceId} ${beforeSeq !== undefined ? sql`and seq < ${beforeSeq}` : sql``}
    order by seq desc limit ${limit}`)
  return rowsOf<{ seq: string | number; kind: string; status: string; created_at: Date | string; delivered_at: Date | string | null }>(
    rows,
  ).map((r) => ({
    seq: Number(r.seq),
    kind: r.kind,
    status: r.status,
    createdAt: new Date(r.created_at),
    deliveredAt: r.delivered_at ? new Date(r.delivered_at) : null,
  }))
}
