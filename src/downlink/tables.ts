import { bigint, boolean, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'
import { device } from '../devices/tables.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

export const downlinkStatuses = ['pending', 'delivered', 'superseded'] as const
export type DownlinkStatus = (typeof downlinkStatuses)[number]

/**
 * Every message the service sends to a device, written before it is published: the broker's
 * memory is never the only copy. `seq` counts per device (device_downlink.last_seq holds the
 * last one handed out), so a device and the service agree on what came before what. A row stays
 * `pending` until the device acknowledges it (PUBACK or up/ack), becomes `superseded` when a newer
 * message of a kind that replaces the older one (config, image) is recorded, and is pruned later.
 *
 * One index only, the primary key: a status change is then a HOT update (no index touched; the
 * table leaves room for it, fillfactor 70 in the migration), which is most of what delivery
 * costs on the embedded database. A device's pending messages are found through its key range.
 */
export const deviceMessage = pgTable(
  'device_message',
  {
    deviceId: text('device_id')
      .notNull()
      .references(() => device.id, { onDelete: 'cascade' }),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    kind: text('kind').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    retain: boolean('retain').notNull().default(false),
    status: text('status').$type<DownlinkStatus>().notNull().default('pending'),
    createdAt: ts('created_at').notNull().defaultNow(),
    deliveredAt: ts('delivered_at'),
  },
  (t) => [primaryKey({ columns: [t.deviceId, t.seq] })],
)

/**
 * Per device, the last seq handed out. A row of its own, narrow and often updated, rather than a
 * column of the wide, busy device row (fillfactor 50 in the migration, for HOT updates).
 */
export const deviceDownlink = pgTable('device_downlink', {
  deviceId: text('device_id')
    .primaryKey()
    .references(() => device.id, { onDelete: 'cascade' }),
  lastSeq: bigint('last_seq', { mode: 'number' }).notNull().default(0),
})
