import { boolean, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { device } from '../devices/tables.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

/**
 * What device health knows of a device, from its status reports: when it last reported and how
 * often it says it does, and which alerts are raised (so each is sent once, and battery-low again
 * only after the battery was back above the re-arm level).
 */
export const deviceHealth = pgTable(
  'device_health',
  {
    deviceId: text('device_id')
      .primaryKey()
      .references(() => device.id, { onDelete: 'cascade' }),
    lastReportAt: ts('last_report_at').notNull(),
    /** Seconds between the device's status reports, as it says (`interval` in up/status). */
    intervalSeconds: integer('interval_seconds'),
    batteryLow: boolean('battery_low').notNull().default(false),
    silent: boolean('silent').notNull().default(false),
  },
  (t) => [index('device_health_last_report_idx').on(t.lastReportAt)],
)
