// Request and response schemas for playlists and device schedules (TypeBox, so the service's input
// types are what is validated).
import { Type } from 'typebox'
import { MODEL_IDS } from '../generation/models.js'
import { NullableString, Shared, StringEnum } from '../http/typebox.js'
import { exampleIds } from '../openapi/examples.js'
import { WEEKDAYS } from './plan.js'
import { playlistItemKinds, playlistModes } from './tables.js'

const id = Type.String({ minLength: 1, maxLength: 128 })
/** "HH:MM", 00:00 to 23:59, or 24:00 (the end of the day, as an end only). */
const localTime = Type.String({
  pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$',
  description: 'local time HH:MM (24:00 as an end only)',
})

export const playlistItemInputSchema = Shared(
  'PlaylistItemInput',
  Type.Union(
    [
      Type.Object({ kind: Type.Literal('upload'), key: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false }),
      Type.Object({ kind: Type.Literal('image'), imageId: id }, { additionalProperties: false }),
      Type.Object(
        { kind: Type.Literal('prompt'), promptId: id, model: Type.Optional(StringEnum(MODEL_IDS)) },
        { additionalProperties: false },
      ),
      Type.Object({ kind: Type.Literal('screen'), screenId: id }, { additionalProperties: false }),
    ],
    {
      description:
        'An upload of yours (its key), a stored image of yours (from generation history), a prompt of yours generated afresh each time it comes up (charged like any generation), or a screen you may see (drawn when it comes up, and again when its data changes while it shows).',
    },
  ),
)

const fields = {
  name: Type.String({ minLength: 1, maxLength: 100 }),
  mode: StringEnum(playlistModes, { description: 'sequential: in order, round and round; shuffle: a new order each round' }),
  itemSeconds: Type.Integer({ minimum: 1, maximum: 7 * 86400, description: 'how long each item shows; at least SCHEDULE_MIN_SECONDS' }),
}

export const playlistCreateSchema = Type.Object(
  {
    ...fields,
    organizationId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'the organization that owns it (you must be its owner or admin)' }),
    ),
    items: Type.Optional(Type.Array(playlistItemInputSchema, { maxItems: 500 })),
  },
  {
    additionalProperties: false,
    examples: [{ name: 'Family photos', mode: 'shuffle', itemSeconds: 3600, items: [{ kind: 'upload', key: exampleIds.uploadKey }] }],
  },
)

export const playlistPatchSchema = Type.Object(
  { name: Type.Optional(fields.name), mode: Type.Optional(fields.mode), itemSeconds: Type.Optional(fields.itemSeconds) },
  { additionalProperties: false, minProperties: 1, examples: [{ name: 'Family photos (winter)', itemSeconds: 1800 }] },
)

export const playlistItemAddSchema = Type.Object(
  {
    item: playlistItemInputSchema,
    position: Type.Optional(Type.Integer({ minimum: 0, maximum: 500, description: 'where it goes (0 = first); the end when left out' })),
  },
  { additionalProperties: false, examples: [{ item: { kind: 'upload', key: exampleIds.uploadKey }, position: 0 }] },
)

export const playlistOrderSchema = Type.Object(
  { itemIds: Type.Array(id, { maxItems: 500, description: 'every item of the playlist, once, in the new order' }) },
  { additionalProperties: false, examples: [{ itemIds: [exampleIds.playlistItemIds[1], exampleIds.playlistItemIds[0]] }] },
)

export const playlistRecordSchema = Shared(
  'Playlist',
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    mode: StringEnum(playlistModes),
    itemSeconds: Type.Integer(),
    userId: Type.String(),
    organizationId: NullableString(),
    items: Type.Array(
      Type.Object({
        id: Type.String(),
        kind: StringEnum(playlistItemKinds),
        position: Type.Integer(),
        key: Type.Optional(Type.String()),
        imageId: Type.Optional(Type.String()),
        promptId: Type.Optional(Type.String()),
        screenId: Type.Optional(Type.String()),
        model: Type.Optional(Type.String()),
      }),
    ),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  }),
)

const window = { from: localTime, to: localTime }

export const scheduleInputSchema = Type.Object(
  {
    timeZone: Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, e.g. Europe/Berlin' }),
    rules: Type.Array(
      Type.Object(
        {
          playlistId: id,
          days: Type.Array(StringEnum(WEEKDAYS), { minItems: 1, maxItems: 7 }),
          ...window,
        },
        {
          additionalProperties: false,
          description:
            'plays the playlist from `from` to `to` (the next day when `to` is not after `from`) on each of `days` (the day it starts)',
        },
      ),
      { maxItems: 50 },
    ),
    sleep: Type.Array(
      Type.Object(window, { additionalProperties: false, description: 'every day: nothing is sent, the device may sleep' }),
      {
        maxItems: 10,
      },
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        timeZone: 'Europe/Berlin',
        rules: [{ playlistId: exampleIds.playlistId, days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '07:00', to: '22:00' }],
        sleep: [{ from: '23:00', to: '06:30' }],
      },
    ],
  },
)

export const scheduleRecordSchema = Shared(
  'DeviceSchedule',
  Type.Object({
    deviceId: Type.String(),
    timeZone: Type.String(),
    rules: Type.Array(Type.Object({ playlistId: Type.String(), days: Type.Array(Type.String()), from: Type.String(), to: Type.String() })),
    sleep: Type.Array(Type.Object({ from: Type.String(), to: Type.String() })),
    now: Type.Object(
      {
        state: StringEnum(['playing', 'sleeping', 'idle'] as const),
        playlistId: NullableString(),
        itemId: NullableString(),
        sleepingUntil: NullableString(),
      },
      { description: 'what the plan says now' },
    ),
    nextChangeAt: NullableString({ format: 'date-time' }),
    lastTurn: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
      description: 'what the scheduler last sent, and when',
    }),
    updatedAt: Type.String({ format: 'date-time' }),
  }),
)
