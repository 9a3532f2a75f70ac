// The request bodies the device service takes, as schemas: the routes validate with them and the
// service's input types are derived from them, so the two cannot drift.
import { Type, type Static } from 'typebox'
import { exampleIds } from '../openapi/examples.js'
import { deviceInformationSchema, displayProfileSchema, ditherSchema } from './records.js'

export const deviceId = Type.String({ minLength: 1, maxLength: 64 })
const name = Type.String({ minLength: 1, maxLength: 64 })
const icon = Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9][a-z0-9_-]*$' })
const color = Type.String({ pattern: '^#[0-9a-fA-F]{6}$', description: 'hex colour #RRGGBB' })
const description = Type.String({ maxLength: 500 })
const selectedModel = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]*$' })
const codeProps = {
  pinCode: Type.Optional(Type.String({ minLength: 1, maxLength: 16, description: 'XXXX-XXXX, case and dash ignored' })),
  userCode: Type.Optional(Type.String({ format: 'uuid' })),
}

/** The display profile as a device sends it: fields a newer firmware adds are ignored, not refused. */
const tolerantDisplay = Type.Object(displayProfileSchema.properties, { additionalProperties: true })

export const initBody = Type.Object(
  { display: tolerantDisplay, ...deviceInformationSchema.properties },
  { additionalProperties: true, examples: [{ display: { width: 800, height: 480, palette: 'bw' }, model: 'frame-7', firmware: '1.3.2' }] },
)
export type InitInput = Static<typeof initBody>

export const codeBody = Type.Object(codeProps, { additionalProperties: false, examples: [{ userCode: exampleIds.userCode }] })
export type CodeInput = Static<typeof codeBody>

export const claimBody = Type.Object(
  {
    ...codeProps,
    name,
    icon: Type.Optional(icon),
    color: Type.Optional(color),
    description: Type.Optional(description),
    selectedModel: Type.Optional(selectedModel),
    organizationId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    replace: Type.Optional(
      Type.Boolean({
        description:
          'A TRMNL frame set up again that is already one of your devices (409 DEVICE_ALREADY_PAIRED names it): true gives that device this pairing, its history kept',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ pinCode: exampleIds.pinCode, name: 'Kitchen', icon: 'frame', color: '#ffaa00' }] },
)
export type ClaimInput = Static<typeof claimBody>

/** PATCH /api/device/{id}: the owner's settings; of the display only the dithering (the rest is the panel's). */
export const patchBody = Type.Object(
  {
    name: Type.Optional(name),
    icon: Type.Optional(icon),
    color: Type.Optional(color),
    description: Type.Optional(description),
    selectedModel: Type.Optional(selectedModel),
    display: Type.Optional(
      Type.Object(
        { dither: ditherSchema },
        {
          additionalProperties: false,
          description: "of the display only the dithering can be changed: its size and palette are the panel's",
        },
      ),
    ),
  },
  { minProperties: 1, additionalProperties: false, examples: [{ name: 'Kitchen frame', color: '#2a9d8f' }] },
)
export type PatchInput = Static<typeof patchBody>
