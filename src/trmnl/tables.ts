import { bigint, index, integer, pgTable, real, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 })

/**
 * A device running TRMNL's firmware, which polls over HTTP (docs/trmnl.md). Its id is the device
 * id of its pairing (the device row exists once someone claimed it). The MAC is not a secret: the
 * access token is, stored as its SHA-256 only.
 */
export const trmnlDevice = pgTable(
  'trmnl_device',
  {
    deviceId: text('device_id').primaryKey(),
    mac: text('mac').notNull(),
    apiKeyHash: text('api_key_hash').notNull(),
    /** The pairing code the firmware paints (friendly_id). */
    friendlyId: text('friendly_id').notNull(),
    model: text('model'),
    firmware: text('firmware'),
    /** Seconds between polls, as the device said in its last request. */
    refreshRate: integer('refresh_rate'),
    rssi: integer('rssi'),
    batteryVoltage: real('battery_voltage'),
    /** The file name last answered, and the image the device last downloaded. */
    lastFilename: text('last_filename'),
    shownImageId: text('shown_image_id'),
    /** The firmware's Ed25519 device key (raw, hex), bound at its first signed request; required from then on. */
    publicKey: text('public_key'),
    /** The newest X-Timestamp accepted (ms): a signed request is never accepted twice. */
    lastSignedAt: bigint('last_signed_at', { mode: 'number' }),
    lastPolledAt: ts('last_polled_at'),
    /** When the next poll is due: now plus the refresh_rate it was answered (a sleep window makes it long). */
    nextPollAt: ts('next_poll_at'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('trmnl_device_api_key_uq').on(t.apiKeyHash),
    index('trmnl_device_mac_idx').on(t.mac),
    index('trmnl_device_next_poll_idx').on(t.nextPollAt),
  ],
)
