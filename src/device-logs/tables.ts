import { bigint, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { device } from '../devices/tables.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

export const logLevels = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof logLevels)[number]

/** What a device logged: kept per device up to a count and an age (the oldest go first). */
export const deviceLog = pgTable(
  'device_log',
  {
    id: text('id').primaryKey(),
    deviceId: text('device_id')
      .notNull()
      .references(() => device.id, { onDelete: 'cascade' }),
    /** When the device says it happened (its clock; the time received when it gave none that makes sense). */
    at: ts('at').notNull(),
    receivedAt: ts('received_at').notNull().defaultNow(),
    level: text('level').$type<LogLevel>().notNull(),
    message: text('message').notNull(),
    fields: jsonb('fields').$type<Record<string, unknown>>(),
  },
  (t) => [index('device_log_device_at_idx').on(t.deviceId, t.at, t.id), index('device_log_received_idx').on(t.receivedAt)],
)

/** Per device, what was kept and what was not, and why: limits are counted, never an error loop. */
export const deviceLogStats = pgTable('device_log_stats', {
  deviceId: text('device_id')
    .primaryKey()
    .references(() => device.id, { onDelete: 'cascade' }),
  accepted: bigint('accepted', { mode: 'number' }).notNull().default(0),
  /** Entries past the device's rate. */
  droppedRate: bigint('dropped_rate', { mode: 'number' }).notNull().default(0),
  /** Entries (or whole batches) over a size limit. */
  droppedSize: bigint('dropped_size', { mode: 'number' }).notNull().default(0),
  /** Entries or batches that were not log entries at all. */
  droppedInvalid: bigint('dropped_invalid', { mode: 'number' }).notNull().default(0),
  /** Kept entries removed later for the count or age limit. */
  pruned: bigint('pruned', { mode: 'number' }).notNull().default(0),
  lastAt: ts('last_at'),
})
