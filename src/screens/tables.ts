import { boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'
import { organization, user } from '../db/schema.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

/** Why the screen's last render or fetch failed; cleared by the next one that succeeds. */
export type ScreenError = { code: string; message: string; at: string }

/**
 * A dashboard: a Liquid template (or a built-in screen's), variables, and data that is pushed by
 * a webhook (`tokenHash`) or fetched from `sourceUrl` every `sourceEverySeconds` (claimed by
 * moving `nextFetchAt`). `sourceHeaders` is sealed with a key derived from AUTH_SECRET; only its
 * names are ever shown. Same ownership rules as playlists and devices.
 */
export const screen = pgTable(
  'screen',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').references(() => organization.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    template: text('template'),
    builtin: text('builtin'),
    css: text('css'),
    /** Who draws the HTML: 'takumi' (the worker) or 'chromium' (full CSS, where installed). */
    renderer: text('renderer').$type<'takumi' | 'chromium'>().notNull().default('takumi'),
    variables: jsonb('variables').$type<Record<string, unknown>>().notNull().default({}),
    timeZone: text('time_zone').notNull().default('UTC'),
    tokenHash: text('token_hash').notNull(),
    sourceUrl: text('source_url'),
    sourceEverySeconds: integer('source_every_seconds'),
    sourceHeaders: text('source_headers'),
    sourceHeaderNames: jsonb('source_header_names').$type<string[]>().notNull().default([]),
    allowPrivate: boolean('allow_private').notNull().default(false),
    data: jsonb('data').$type<unknown>(),
    dataAt: ts('data_at'),
    nextFetchAt: ts('next_fetch_at'),
    lastError: jsonb('last_error').$type<ScreenError>(),
    renderedAt: ts('rendered_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('screen_user_id_idx').on(t.userId),
    index('screen_organization_id_idx').on(t.organizationId),
    index('screen_next_fetch_at_idx').on(t.nextFetchAt),
  ],
)

/**
 * The picture a screen last rendered for one kind of frame (`key`: a display profile's key, and
 * the device's id when the template reads the device). `pngSha256` is the renderer's output and
 * `sha256` the converted main variant's: a render whose bytes match sends nothing. Frames show
 * the screen while their desired image is one of these.
 */
export const screenRender = pgTable(
  'screen_render',
  {
    screenId: text('screen_id')
      .notNull()
      .references(() => screen.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    imageId: text('image_id').notNull(),
    pngSha256: text('png_sha256').notNull(),
    sha256: text('sha256').notNull(),
    renderedAt: ts('rendered_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.screenId, t.key] }), index('screen_render_image_idx').on(t.imageId)],
)
