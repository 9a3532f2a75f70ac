import { boolean, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { user } from '../db/schema.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

/**
 * A browser's push subscription (the PushSubscription JSON it hands us). An endpoint belongs to
 * one browser profile, so it is unique: subscribing it again, even as another user, moves it.
 */
export const pushSubscription = pgTable(
  'push_subscription',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    endpoint: text('endpoint').notNull().unique(),
    p256dh: text('p256dh').notNull(),
    auth: text('auth').notNull(),
    expirationTime: ts('expiration_time'),
    userAgent: text('user_agent'),
    createdAt: ts('created_at').notNull().defaultNow(),
    lastSuccessAt: ts('last_success_at'),
    lastFailureAt: ts('last_failure_at'),
    failureCount: integer('failure_count').notNull().default(0),
  },
  (t) => [index('push_subscription_user_idx').on(t.userId, t.createdAt)],
)

/** What a user wants to be notified about; no row means the defaults (everything on). */
export const notificationPreference = pgTable('notification_preference', {
  userId: text('user_id')
    .primaryKey()
    .references(() => user.id, { onDelete: 'cascade' }),
  generationResults: boolean('generation_results').notNull().default(true),
  devicePresence: boolean('device_presence').notNull().default(true),
  batteryLow: boolean('battery_low').notNull().default(true),
  deviceSilent: boolean('device_silent').notNull().default(true),
  firmwareFailed: boolean('firmware_failed').notNull().default(true),
  updatedAt: ts('updated_at').notNull().defaultNow(),
})
