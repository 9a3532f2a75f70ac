import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { organization, user } from '../db/schema.js'
import type { DitherMethod } from '../images/profiles.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

export type DisplayProfile = {
  width: number
  height: number
  /** bw (1-bit), gray4, spectra6, acep7 or color */
  palette: string
  fit?: 'cover' | 'contain'
  inline?: boolean
  /** how images are dithered; left out, the palette's default */
  dither?: DitherMethod
}

export type DeviceReport = {
  battery?: number
  firmware?: string
  shownImageId?: string | null
  configVersion?: number
  reportedAt?: string
}

export type DeviceInfo = { model?: string; firmware?: string; manufacturer?: string; serial?: string }

export const device = pgTable(
  'device',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').references(() => organization.id, { onDelete: 'set null' }),
    pinCode: text('pin_code').notNull(),
    isSynced: boolean('is_synced').notNull().default(false),
    icon: text('icon').notNull().default('frame'),
    description: text('description').notNull().default(''),
    color: text('color').notNull().default('#000000'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date', precision: 3 }).notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    isActive: boolean('is_active').notNull().default(false),
    selectedModel: text('selected_model').notNull().default('local'),
    display: jsonb('display').$type<DisplayProfile>().notNull(),
    info: jsonb('info').$type<DeviceInfo>().notNull().default({}),
    lastSeenAt: ts('last_seen_at'),
    // SHA-256 of the 256-bit MQTT secret; null once revoked. The secret itself is never stored.
    secretHash: text('secret_hash'),
    secretIssuedAt: ts('secret_issued_at'),
    // What the device should show (config version, image) and what it last reported showing;
    // isSynced is true when the two agree.
    desiredConfigVersion: integer('desired_config_version').notNull().default(1),
    desiredImageId: text('desired_image_id'),
    reported: jsonb('reported').$type<DeviceReport>().notNull().default({}),
    // The live MQTT connection ("<broker id>/<uuid>"), so a disconnect that lost a takeover race on
    // another instance cannot mark the device offline, and a restarted node finds what it held.
    connectionId: text('connection_id'),
  },
  (t) => [index('device_user_id_idx').on(t.userId), index('device_organization_id_idx').on(t.organizationId)],
)

export const deviceInitStatuses = ['pending', 'approved', 'active', 'denied', 'expired', 'disconnected'] as const
export type DeviceInitStatus = (typeof deviceInitStatuses)[number]

/** The initialisation record (RFC 8628 style): one per pairing attempt; its id is the device id. */
export const deviceInit = pgTable(
  'device_init',
  {
    id: text('id').primaryKey(),
    // SHA-256 of the device's polling secret.
    deviceCodeHash: text('device_code_hash').notNull(),
    userCode: text('user_code').notNull().unique(),
    pinCode: text('pin_code').notNull(),
    status: text('status').$type<DeviceInitStatus>().notNull().default('pending'),
    expiresAt: ts('expires_at').notNull(),
    interval: integer('interval').notNull(),
    lastPolledAt: ts('last_polled_at'),
    failedAttempts: integer('failed_attempts').notNull().default(0),
    display: jsonb('display').$type<DisplayProfile>().notNull(),
    info: jsonb('info').$type<DeviceInfo>().notNull().default({}),
    userId: text('user_id').references(() => user.id, { onDelete: 'set null' }),
    organizationId: text('organization_id').references(() => organization.id, { onDelete: 'set null' }),
    eventId: text('event_id'),
    createdAt: ts('created_at').notNull().defaultNow(),
    decidedAt: ts('decided_at'),
    credentialsIssuedAt: ts('credentials_issued_at'),
  },
  (t) => [
    // A pin identifies one pending record; used pins may repeat.
    uniqueIndex('device_init_pending_pin_uq').on(t.pinCode).where(sql`status = 'pending'`),
    // Used pins are looked up too, to answer 409/410 rather than a generic 404.
    index('device_init_pin_idx').on(t.pinCode, t.createdAt),
    index('device_init_status_expires_idx').on(t.status, t.expiresAt),
  ],
)

export const deviceCommandNames = ['identify', 'refresh', 'reboot', 'sleep'] as const
export type DeviceCommandName = (typeof deviceCommandNames)[number]

/** A command sent to a device over MQTT, and its acknowledgement. */
export const deviceCommand = pgTable(
  'device_command',
  {
    id: text('id').primaryKey(),
    deviceId: text('device_id')
      .notNull()
      .references(() => device.id, { onDelete: 'cascade' }),
    userId: text('user_id'),
    command: text('command').$type<DeviceCommandName>().notNull(),
    args: jsonb('args').$type<Record<string, unknown>>().notNull().default({}),
    status: text('status').$type<'sent' | 'acked' | 'failed'>().notNull().default('sent'),
    createdAt: ts('created_at').notNull().defaultNow(),
    ackedAt: ts('acked_at'),
    result: jsonb('result').$type<Record<string, unknown>>(),
  },
  (t) => [index('device_command_device_idx').on(t.deviceId, t.createdAt)],
)
