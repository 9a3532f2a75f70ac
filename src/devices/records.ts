// The interface's Device and Device initialisation records, and the JSON schemas that
// describe (and, on responses, enforce) them.
import { Type } from 'typebox'
import { Shared, StringEnum } from '../http/typebox.js'
import type { DeviceInitRow, DeviceRow } from './repository.js'
import { DEFAULT_DITHER, DISPLAY_LIMITS, DITHER_METHODS, PALETTE_NAMES } from '../images/profiles.js'

const str = { type: 'string' } as const
const nstr = { type: ['string', 'null'] } as const
const dateTime = { type: 'string', format: 'date-time' } as const

const deviceFields = [
  'id',
  'name',
  'userId',
  'pinCode',
  'isSynced',
  'icon',
  'description',
  'color',
  'created_at',
  'isActive',
  'selectedModel',
] as const

const deviceRecordSchema = {
  $id: 'Device',
  type: 'object',
  required: [...deviceFields],
  additionalProperties: false,
  properties: {
    id: str,
    name: str,
    userId: str,
    pinCode: str,
    isSynced: { type: 'boolean' },
    icon: str,
    description: { type: 'string', description: 'may be empty' },
    color: { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' },
    created_at: dateTime,
    isActive: { type: 'boolean' },
    selectedModel: str,
  },
} as const

const defaults = Object.entries(DEFAULT_DITHER)
  .filter(([palette]) => palette !== 'color')
  .map(([palette, method]) => `${palette}: ${method}`)
  .join(', ')

/** How a palette display's images are dithered; shared by the display profile and PATCH /api/device/{id}. */
export const ditherSchema = StringEnum(DITHER_METHODS, {
  description:
    `How images are dithered to the panel's inks: Floyd–Steinberg or Atkinson error diffusion, or ordered dithering with a blue-noise threshold map (no checkerboard in flat mid-greys). ` +
    `Left out, the palette's default applies (${defaults}); ignored for colour displays.`,
})

// The two a device sends (in POST /api/device/init) are TypeBox, so the request's type comes from them.
export const displayProfileSchema = Shared(
  'DisplayProfile',
  Type.Object(
    {
      width: Type.Integer({ minimum: 16, maximum: DISPLAY_LIMITS.color.maxSide }),
      height: Type.Integer({ minimum: 16, maximum: DISPLAY_LIMITS.color.maxSide }),
      palette: Type.String({ enum: [...PALETTE_NAMES] }),
      fit: Type.Optional(StringEnum(['cover', 'contain'], { default: 'cover' })),
      inline: Type.Optional(Type.Boolean({ description: 'also send small images (≤ 64 KiB) inline, base64, in the MQTT message' })),
      dither: Type.Optional(ditherSchema),
    },
    {
      additionalProperties: false,
      description: `As large as real panels: a colour display at most ${DISPLAY_LIMITS.color.maxSide}×2160 (either way round), an e-paper palette at most ${DISPLAY_LIMITS.epaper.maxSide}×1800; larger is 400 DISPLAY_TOO_LARGE.`,
    },
  ),
)

export const deviceInformationSchema = Shared(
  'DeviceInformation',
  Type.Object(
    {
      model: Type.Optional(Type.String({ maxLength: 100 })),
      firmware: Type.Optional(Type.String({ maxLength: 50 })),
      manufacturer: Type.Optional(Type.String({ maxLength: 100 })),
      serial: Type.Optional(Type.String({ maxLength: 100 })),
    },
    { additionalProperties: false },
  ),
)

const deviceDetailSchema = {
  $id: 'DeviceDetail',
  type: 'object',
  required: [...deviceFields, 'organization_id', 'display', 'info', 'last_seen_at'],
  properties: {
    ...deviceRecordSchema.properties,
    organization_id: nstr,
    display: { $ref: 'DisplayProfile#' },
    info: { $ref: 'DeviceInformation#' },
    last_seen_at: { type: ['string', 'null'], format: 'date-time' },
    status: {
      description: 'what the device last reported on up/status (null until it has); isSynced compares it with what it should show',
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          properties: {
            battery: { type: 'number', description: 'percent' },
            firmware: str,
            shownImageId: { ...nstr, description: 'the image it shows now (GET /api/images/{id}/{format})' },
            reportedAt: dateTime,
          },
        },
      ],
    },
    desiredImageId: { ...nstr, description: 'the image it was last sent and should show' },
  },
} as const

const credentialsSchema = {
  $id: 'DeviceCredentials',
  type: 'object',
  required: ['mqttUrl', 'username', 'password', 'clientId', 'topics'],
  properties: {
    mqttUrl: str,
    websocketUrl: str,
    username: str,
    password: { type: 'string', description: '256-bit secret, shown once' },
    clientId: str,
    topics: {
      type: 'object',
      properties: {
        prompt: str,
        image: str,
        config: str,
        cmd: str,
        ota: str,
        state: str,
        status: str,
        ack: str,
        log: str,
        otaProgress: { type: 'string', description: 'up/ota: firmware update progress' },
      },
    },
    firmwareKey: { type: 'string', description: 'Ed25519 public key (raw, base64) that firmware offers are signed with' },
  },
} as const

const initRecordSchema = {
  $id: 'DeviceInitRecord',
  description: 'Device initialisation record',
  type: 'object',
  required: [...deviceFields, 'organization_id', 'eventId', 'deviceCode', 'userCode', 'status', 'expires_at'],
  properties: {
    id: str,
    name: nstr,
    userId: nstr,
    pinCode: str,
    isSynced: { type: 'boolean' },
    icon: nstr,
    description: { type: 'string' },
    color: nstr,
    created_at: dateTime,
    isActive: { type: 'boolean' },
    selectedModel: nstr,
    organization_id: nstr,
    eventId: nstr,
    deviceCode: str,
    userCode: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['pending', 'approved', 'active', 'denied', 'expired', 'disconnected'] },
    expires_at: dateTime,
    interval: { type: 'integer' },
    credentials: { $ref: 'DeviceCredentials#' },
  },
} as const

export const sharedDeviceSchemas = [
  displayProfileSchema,
  deviceInformationSchema,
  deviceRecordSchema,
  deviceDetailSchema,
  credentialsSchema,
  initRecordSchema,
]

export function toDeviceRecord(d: DeviceRow) {
  return {
    id: d.id,
    name: d.name,
    userId: d.userId,
    pinCode: d.pinCode,
    isSynced: d.isSynced,
    icon: d.icon,
    description: d.description,
    color: d.color,
    created_at: d.createdAt.toISOString(),
    isActive: d.isActive,
    selectedModel: d.selectedModel,
  }
}

/**
 * Why a stored device record cannot be answered as a DeviceDetail (its display profile is not one
 * the schema allows: a record stored before a bug was fixed, or edited by hand), or undefined.
 */
export function unreadableRecord(d: DeviceRow): string | undefined {
  const display = d.display as unknown
  if (!display || typeof display !== 'object' || Array.isArray(display)) return 'its display profile is missing'
  const { width, height, palette } = display as Record<string, unknown>
  const side = (v: unknown) => Number.isInteger(v) && (v as number) >= 16 && (v as number) <= DISPLAY_LIMITS.color.maxSide
  if (!side(width) || !side(height)) return `its display size ${String(width)}×${String(height)} is not one a panel has`
  if (typeof palette !== 'string' || !(PALETTE_NAMES as readonly string[]).includes(palette))
    return 'its display palette is not one this service knows'
  return undefined
}

/** The 4xx for an unreadable record, saying how to repair it. */
export function unreadableMessage(d: DeviceRow, why: string): string {
  return `The stored record of device ${d.id} cannot be read: ${why}. A TRMNL frame repairs it at its next poll (it says its panel); any device is repaired by deleting it (DELETE /api/device/delete) and pairing it again`
}

export function toDeviceDetail(d: DeviceRow) {
  return {
    ...toDeviceRecord(d),
    organization_id: d.organizationId,
    display: d.display,
    info: d.info,
    last_seen_at: d.lastSeenAt?.toISOString() ?? null,
    status: d.reported.reportedAt
      ? {
          battery: d.reported.battery,
          firmware: d.reported.firmware,
          shownImageId: d.reported.shownImageId ?? null,
          reportedAt: d.reported.reportedAt,
        }
      : null,
    desiredImageId: d.desiredImageId ?? null,
  }
}

/** Device fields come from the bound device once approved; before that they are empty. */
export function toInitRecord(init: DeviceInitRow, dev: DeviceRow | undefined, deviceCode: string) {
  return {
    id: init.id,
    name: dev?.name ?? null,
    userId: dev?.userId ?? init.userId ?? null,
    pinCode: init.pinCode,
    isSynced: dev?.isSynced ?? false,
    icon: dev?.icon ?? null,
    description: dev?.description ?? '',
    color: dev?.color ?? null,
    created_at: init.createdAt.toISOString(),
    isActive: dev?.isActive ?? false,
    selectedModel: dev?.selectedModel ?? null,
    organization_id: init.organizationId,
    eventId: init.eventId,
    deviceCode,
    userCode: init.userCode,
    status: init.status,
    expires_at: init.expiresAt.toISOString(),
    interval: init.interval,
  }
}
