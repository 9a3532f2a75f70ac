import { bigint, boolean, index, integer, pgTable, primaryKey, real, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { user } from '../db/schema.js'
import { device } from '../devices/tables.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

export const firmwareChannels = ['stable', 'beta'] as const
export type FirmwareChannel = (typeof firmwareChannels)[number]

/** Where a device is with the release it was offered; `succeeded` only once its status reports the version, `withdrawn` when a halt took back an offer not yet taken up. */
export const otaStates = ['offered', 'downloading', 'verifying', 'installing', 'succeeded', 'failed', 'withdrawn'] as const
export type OtaState = (typeof otaStates)[number]

/** A firmware image for one device model: stored in the object store, its digest and signature computed here. */
export const firmwareRelease = pgTable(
  'firmware_release',
  {
    id: text('id').primaryKey(),
    model: text('model').notNull(),
    version: text('version').notNull(),
    channel: text('channel').$type<FirmwareChannel>().notNull(),
    notes: text('notes').notNull().default(''),
    objectKey: text('object_key').notNull(),
    sha256: text('sha256').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    /** Ed25519 over the manifest (signing.ts), base64. */
    signature: text('signature').notNull(),
    createdBy: text('created_by').references(() => user.id, { onDelete: 'set null' }),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('firmware_release_model_version_uq').on(t.model, t.version)],
)

/**
 * What a model's devices on a channel should run: the target release, the share of devices
 * offered it (by a bucket of the device id, so raising it only adds devices), paused by hand or
 * halted when too many attempts failed.
 */
export const firmwareRollout = pgTable(
  'firmware_rollout',
  {
    model: text('model').notNull(),
    channel: text('channel').$type<FirmwareChannel>().notNull(),
    releaseId: text('release_id')
      .notNull()
      .references(() => firmwareRelease.id, { onDelete: 'restrict' }),
    percent: integer('percent').notNull(),
    paused: boolean('paused').notNull().default(false),
    /** Set when the failure share passed `maxFailureShare`; cleared by a resume. */
    haltedAt: ts('halted_at'),
    /** Attempts that ended from this time on count towards a halt: a new target or a resume starts afresh. */
    countingSince: ts('counting_since').notNull().defaultNow(),
    /** Halt when failed / (failed + succeeded) is above this, once `minAttempts` attempts ended. */
    maxFailureShare: real('max_failure_share').notNull(),
    minAttempts: integer('min_attempts').notNull(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    updatedBy: text('updated_by').references(() => user.id, { onDelete: 'set null' }),
  },
  (t) => [primaryKey({ columns: [t.model, t.channel] })],
)

/** A device's firmware: its channel, a pin (any version, downgrades included), and its current offer. */
export const deviceFirmware = pgTable(
  'device_firmware',
  {
    deviceId: text('device_id')
      .primaryKey()
      .references(() => device.id, { onDelete: 'cascade' }),
    channel: text('channel').$type<FirmwareChannel>().notNull().default('stable'),
    pinnedReleaseId: text('pinned_release_id').references(() => firmwareRelease.id, { onDelete: 'restrict' }),
    /**
     * The model an admin enrolled this device in the fleet of (null: not enrolled). Only enrolled
     * devices are offered a rollout's release and count towards its halt: a model a device declares
     * itself is not enough (docs/firmware.md, "Who is offered a release").
     */
    fleetModel: text('fleet_model'),
    /** The release last offered, and how far the device got with it. */
    releaseId: text('release_id').references(() => firmwareRelease.id, { onDelete: 'restrict' }),
    state: text('state').$type<OtaState>(),
    reason: text('reason'),
    offeredAt: ts('offered_at'),
    updatedAt: ts('updated_at'),
  },
  (t) => [index('device_firmware_release_idx').on(t.releaseId, t.state), index('device_firmware_pin_idx').on(t.pinnedReleaseId)],
)
