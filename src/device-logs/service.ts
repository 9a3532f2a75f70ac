// Device logs: batches from devices (devices/{id}/up/log over MQTT, or POST with the device's
// secret over HTTP), checked entry by entry, kept per device up to a count and an age, and read by
// the device's owner with filters and paging. Everything a device sends past a limit is counted
// per device (rate, size, not a log entry, pruned), never answered with an error it could loop on.
import { randomUUID } from 'node:crypto'
import type { Database } from '../db/client.js'
import type { Cursor } from '../db/paging.js'
import { addCounts, findCounts, insertLogs, type LogCounts, listLogs, pruneOlderThan, pruneToCount } from './repository.js'
import { type LogLevel, logLevels } from './tables.js'

/** Limits on what one batch may carry (fixed: they bound memory per message, not policy). */
export const LOG_BATCH_MAX_BYTES = 64 * 1024
export const LOG_BATCH_MAX_ENTRIES = 100
const MESSAGE_MAX_CHARS = 1024
const FIELDS_MAX_BYTES = 2048
/** A device's clock may be off; an entry dated further ahead than this is dated when it arrived. */
const FUTURE_SLACK_MS = 24 * 3600_000

export type LogLimits = {
  /** Entries kept per device (the oldest go first). */
  maxEntries: number
  maxAgeDays: number
  /** Entries accepted per device per minute, with bursts up to `burst`. */
  ratePerMinute: number
  burst: number
}

export type IngestResult = LogCounts & { refused: 'too-large' | 'not-a-batch' | null }

type Bucket = { tokens: number; at: number }

export function createDeviceLogService(deps: { db: Database; limits: LogLimits; clock: () => Date }) {
  const { db, limits } = deps
  // Per device, this instance's token bucket: a device's MQTT session lives on one instance.
  const buckets = new Map<string, Bucket>()

  /** Takes up to `want` tokens from the device's bucket; answers how many it got. */
  function take(deviceId: string, want: number): number {
    const now = deps.clock().getTime()
    const b = buckets.get(deviceId) ?? { tokens: limits.burst, at: now }
    b.tokens = Math.min(limits.burst, b.tokens + ((now - b.at) / 60_000) * limits.ratePerMinute)
    b.at = now
    const got = Math.max(0, Math.min(want, Math.floor(b.tokens)))
    b.tokens -= got
    if (buckets.size > 100_000) buckets.clear()
    buckets.set(deviceId, b)
    return got
  }

  /** One entry as stored, or why it is not: `size` (message or fields too long) or `invalid`. */
  function entryOf(
    deviceId: string,
    raw: unknown,
    received: Date,
  ): { row: Parameters<typeof insertLogs>[1][number] } | { refused: 'size' | 'invalid' } {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return { refused: 'invalid' }
    const e = raw as Record<string, unknown>
    if (typeof e.message !== 'string' || e.message.length === 0) return { refused: 'invalid' }
    if (e.message.length > MESSAGE_MAX_CHARS) return { refused: 'size' }
    const level: LogLevel = logLevels.includes(e.level as LogLevel) ? (e.level as LogLevel) : 'info'
    let fields: Record<string, unknown> | null = null
    if (e.fields !== undefined && e.fields !== null) {
      if (typeof e.fields !== 'object' || Array.isArray(e.fields)) return { refused: 'invalid' }
      const json = JSON.stringify(e.fields)
      if (Buffer.byteLength(json) > FIELDS_MAX_BYTES) return { refused: 'size' }
      // PostgreSQL's jsonb takes neither NUL nor a lone surrogate (the only \u escapes JSON.stringify writes besides controls).
      if (/\\u(0000|d[89a-f])/i.test(json)) return { refused: 'invalid' }
      fields = e.fields as Record<string, unknown>
    }
    const claimed = typeof e.at === 'string' || typeof e.at === 'number' ? new Date(e.at) : undefined
    // A device's clock may be wrong either way: beyond a day ahead or older than the age limit, the time it arrived.
    const oldest = received.getTime() - limits.maxAgeDays * 86_400_000
    const sane =
      claimed &&
      Number.isFinite(claimed.getTime()) &&
      claimed.getTime() <= received.getTime() + FUTURE_SLACK_MS &&
      claimed.getTime() >= oldest
    // A NUL cannot be stored in PostgreSQL text: it is replaced, not refused.
    const message = e.message.replaceAll('\u0000', '\uFFFD')
    return { row: { id: randomUUID(), deviceId, at: sane ? claimed : received, receivedAt: received, level, message, fields } }
  }

  /** A batch as it arrived (`bytes` long, `raw` parsed or undefined when it was not JSON). */
  async function ingest(deviceId: string, raw: unknown, bytes: number): Promise<IngestResult> {
    const counts: LogCounts = { accepted: 0, droppedRate: 0, droppedSize: 0, droppedInvalid: 0, pruned: 0 }
    let refused: IngestResult['refused'] = null
    if (bytes > LOG_BATCH_MAX_BYTES || (Array.isArray(raw) && raw.length > LOG_BATCH_MAX_ENTRIES)) {
      refused = 'too-large'
      counts.droppedSize = Array.isArray(raw) ? raw.length : 1
    } else if (!Array.isArray(raw)) {
      refused = 'not-a-batch'
      counts.droppedInvalid = 1
    } else {
      const received = deps.clock()
      const rows: Array<Parameters<typeof insertLogs>[1][number]> = []
      for (const item of raw) {
        const e = entryOf(deviceId, item, received)
        if ('row' in e) rows.push(e.row)
        else if (e.refused === 'size') counts.droppedSize += 1
        else counts.droppedInvalid += 1
      }
      const allowed = take(deviceId, rows.length)
      counts.droppedRate = rows.length - allowed
      counts.accepted = allowed
      if (allowed) {
        // One transaction: a reader sees the entries and the counts that include them, or neither.
        await db.transaction(async (tx) => {
          await insertLogs(tx, rows.slice(0, allowed))
          counts.pruned = await pruneToCount(tx, deviceId, limits.maxEntries)
          await addCounts(tx, deviceId, counts, deps.clock())
        })
        return { ...counts, refused }
      }
    }
    await addCounts(db, deviceId, counts)
    return { ...counts, refused }
  }

  /** Entries of at least `minLevel`, newest first. */
  async function list(
    deviceId: string,
    f: { minLevel: LogLevel; since?: Date; until?: Date; text?: string },
    limit: number,
    cursor?: Cursor,
  ) {
    const levels = logLevels.slice(logLevels.indexOf(f.minLevel))
    return listLogs(db, deviceId, { levels, since: f.since, until: f.until, text: f.text }, limit, cursor)
  }

  async function counts(deviceId: string): Promise<LogCounts> {
    const row = await findCounts(db, deviceId)
    return {
      accepted: row?.accepted ?? 0,
      droppedRate: row?.droppedRate ?? 0,
      droppedSize: row?.droppedSize ?? 0,
      droppedInvalid: row?.droppedInvalid ?? 0,
      pruned: row?.pruned ?? 0,
    }
  }

  /** The age limit, for the periodic sweep. */
  async function sweep(): Promise<void> {
    const before = new Date(deps.clock().getTime() - limits.maxAgeDays * 86_400_000)
    for (const [deviceId, n] of await pruneOlderThan(db, before)) await addCounts(db, deviceId, { pruned: n })
  }

  return { ingest, list, counts, sweep }
}

export type DeviceLogService = ReturnType<typeof createDeviceLogService>
