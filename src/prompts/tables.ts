import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { user } from '../db/schema.js'
import { device } from '../devices/tables.js'

export const prompt = pgTable(
  'prompt',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    // A device's prompts are its history: they go with it.
    deviceId: text('device_id').references(() => device.id, { onDelete: 'cascade' }),
    text: text('text').notNull(),
    negativeText: text('negative_text'),
    style: text('style'),
    template: text('template'),
    model: text('model').notNull(),
    width: integer('width').notNull(),
    height: integer('height').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
  },
  (t) => [index('prompt_device_created_idx').on(t.deviceId, t.createdAt, t.id), index('prompt_user_idx').on(t.userId)],
)
