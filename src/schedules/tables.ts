import { index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { organization, user } from '../db/schema.js'
import { device } from '../devices/tables.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

export const playlistModes = ['sequential', 'shuffle'] as const
export type PlaylistMode = (typeof playlistModes)[number]
export const playlistItemKinds = ['upload', 'image', 'prompt', 'screen'] as const
export type PlaylistItemKind = (typeof playlistItemKinds)[number]

/** What a frame shows in turn; a user's own, or an organization's (same access rules as devices). */
export const playlist = pgTable(
  'playlist',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').references(() => organization.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    mode: text('mode').$type<PlaylistMode>().notNull(),
    itemSeconds: integer('item_seconds').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('playlist_user_id_idx').on(t.userId), index('playlist_organization_id_idx').on(t.organizationId)],
)

/**
 * One entry of a playlist, in `position` order. `ref` is the upload's key, the image's id, the
 * prompt's id or the screen's id, by `kind`. An upload is converted once per display it is shown on: `images` maps a
 * display profile's key to the stored image, so each later turn only publishes.
 */
export const playlistItem = pgTable(
  'playlist_item',
  {
    id: text('id').primaryKey(),
    playlistId: text('playlist_id')
      .notNull()
      .references(() => playlist.id, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    kind: text('kind').$type<PlaylistItemKind>().notNull(),
    ref: text('ref').notNull(),
    model: text('model'),
    /**
     * Who added it: an upload or a prompt is theirs, so a prompt generates as them (and they pay)
     * and an upload is converted into their images.
     */
    addedBy: text('added_by')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    images: jsonb('images').$type<Record<string, string>>().notNull().default({}),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('playlist_item_playlist_idx').on(t.playlistId, t.position)],
)

export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun'
export type ScheduleRule = { playlistId: string; days: Weekday[]; from: string; to: string }
export type SleepWindow = { from: string; to: string }

/** What the scheduler last did for a device: the turn it fired and what shows because of it. */
export type ScheduleCurrent = {
  /** Identifies the turn (rule window and slot, or sleep, or idle), so a turn never fires twice. */
  key: string
  state: 'playing' | 'sleeping' | 'idle'
  playlistId?: string
  itemId?: string
  imageId?: string
  since: string
  sleepingUntil?: string | null
  /** When the device last woke from a sleep window (health counts silence from then). */
  wokeAt?: string
  skipped?: string
}

/**
 * A device's day plan and the scheduler's due work in one row: `nextAt` is when it must look
 * again, claimed by one instance at a time with a lease (`leaseUntil`, `leaseOwner`). The user
 * who set it is the one the scheduled sends are made as.
 */
export const deviceSchedule = pgTable(
  'device_schedule',
  {
    deviceId: text('device_id')
      .primaryKey()
      .references(() => device.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    timeZone: text('time_zone').notNull(),
    rules: jsonb('rules').$type<ScheduleRule[]>().notNull(),
    sleep: jsonb('sleep').$type<SleepWindow[]>().notNull(),
    nextAt: ts('next_at'),
    leaseUntil: ts('lease_until'),
    leaseOwner: text('lease_owner'),
    current: jsonb('current').$type<ScheduleCurrent>(),
    /** Raised by every save: a batch that fired the plan before it changed does not record over it. */
    version: integer('version').notNull().default(0),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('device_schedule_next_at_idx').on(t.nextAt)],
)
