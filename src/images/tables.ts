import { index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'
import { device } from '../devices/tables.js'

/** An image: the original as generated or uploaded, and one row per converted variant. */
export const image = pgTable(
  'image',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull(),
    // Images belong to the user: a deleted device only stops being the one they were made for.
    deviceId: text('device_id').references(() => device.id, { onDelete: 'set null' }),
    jobId: text('job_id'),
    source: text('source').$type<'generation' | 'upload' | 'demo' | 'screen'>().notNull(),
    originalKey: text('original_key').notNull(),
    contentType: text('content_type').notNull(),
    width: integer('width').notNull(),
    height: integer('height').notNull(),
    bytes: integer('bytes').notNull(),
    sha256: text('sha256').notNull(),
    profile: jsonb('profile').$type<Record<string, unknown>>(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('image_user_idx').on(t.userId), index('image_device_idx').on(t.deviceId)],
)

export const imageVariant = pgTable(
  'image_variant',
  {
    imageId: text('image_id')
      .notNull()
      .references(() => image.id, { onDelete: 'cascade' }),
    format: text('format').notNull(),
    key: text('key').notNull(),
    contentType: text('content_type').notNull(),
    width: integer('width').notNull(),
    height: integer('height').notNull(),
    bytes: integer('bytes').notNull(),
    sha256: text('sha256').notNull(),
  },
  (t) => [primaryKey({ columns: [t.imageId, t.format] })],
)
