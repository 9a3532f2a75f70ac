import { pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/** Service-wide values generated once and shared by every instance (e.g. the VAPID key pair). */
export const serviceSetting = pgTable('service_setting', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
})
