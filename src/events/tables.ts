import { sql } from 'drizzle-orm'
import { index, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

/** Everything that happens to a device: pairing changes, connects, disconnects, commands. */
export const event = pgTable(
  'event',
  {
    id: text('id').primaryKey(),
    type: text('type').notNull(),
    deviceId: text('device_id'),
    userId: text('user_id'),
    organizationId: text('organization_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [
    index('event_device_created_idx').on(t.deviceId, t.createdAt, t.id),
    index('event_type_idx').on(t.type),
    // One disconnect per connection, whoever records it: the node that held it, the node the
    // device moved to (a takeover), or a node that saw the first one die.
    uniqueIndex('event_disconnect_connection_uq').on(t.deviceId, sql`(data->>'connectionId')`).where(sql`type = 'device.disconnected'`),
  ],
)
