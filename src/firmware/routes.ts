// Firmware routes. Admins: releases (multipart upload), rollouts per model and channel, a
// device's channel and pin. Owners: what a device runs and has been offered. Devices: a fresh
// download link for their offer, with their secret. Anyone: the public key releases are signed with.
import multipart from '@fastify/multipart'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { principalOf } from '../auth/route-auth.js'
import { findUserById } from '../auth/users-repository.js'
import type { Database } from '../db/client.js'
import { requireDeviceSecret, rolesOf } from '../devices/access.js'
import { deviceAccess, deviceOf } from '../devices/route-access.js'
import { appError } from '../errors.js'
import { callerSecurity as security, errorResponses as errors } from '../http/route-schemas.js'
import { StringEnum } from '../http/typebox.js'
import type { FirmwareService } from './service.js'
import { type FirmwareChannel, firmwareChannels, otaStates } from './tables.js'

const tags = ['firmware']
const MODEL = '^[A-Za-z0-9._-]{1,64}$'
const modelString = Type.String({ pattern: MODEL, description: 'the device model, as devices give it at pairing' })
const versionString = Type.String({ minLength: 1, maxLength: 50, description: 'a semantic version (1.4.0, 2.0.0-beta.1)' })
const counts = Type.Object({
  offered: Type.Integer(),
  pending: Type.Integer({ description: 'offered and not yet ended' }),
  succeeded: Type.Integer({ description: 'the device then reported the version in up/status' }),
  failed: Type.Integer(),
  withdrawn: Type.Integer({ description: 'offers taken back, not yet taken up, when the rollout halted' }),
})
const releaseRecord = Type.Object({
  id: Type.String(),
  model: Type.String(),
  version: Type.String(),
  channel: StringEnum(firmwareChannels),
  notes: Type.String(),
  sha256: Type.String(),
  size: Type.Integer(),
  signature: Type.String({ description: 'Ed25519 over the manifest, base64' }),
  createdAt: Type.String({ format: 'date-time' }),
  counts,
})
const rolloutRecord = Type.Object({
  model: Type.String(),
  channel: StringEnum(firmwareChannels),
  version: Type.Union([Type.String(), Type.Null()]),
  releaseId: Type.String(),
  percent: Type.Integer(),
  paused: Type.Boolean(),
  haltedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  maxFailureShare: Type.Number(),
  minAttempts: Type.Integer(),
  updatedAt: Type.String({ format: 'date-time' }),
  counts,
})
const nullableString = Type.Union([Type.String(), Type.Null()])
const deviceFirmwareRecord = Type.Object({
  deviceId: Type.String(),
  model: nullableString,
  running: nullableString,
  channel: StringEnum(firmwareChannels),
  pinnedVersion: nullableString,
  fleet: Type.Boolean({ description: "enrolled by an admin in its model's fleet: what a rollout reaches" }),
  offer: Type.Union([
    Type.Object({
      releaseId: Type.String(),
      version: Type.String(),
      state: Type.Union([StringEnum(otaStates), Type.Null()]),
      reason: nullableString,
      offeredAt: nullableString,
      updatedAt: nullableString,
    }),
    Type.Null(),
  ]),
})
const offerRecord = Type.Object({
  releaseId: Type.String(),
  model: Type.String(),
  version: Type.String(),
  url: Type.String(),
  urlExpiresAt: Type.String({ format: 'date-time' }),
  sha256: Type.String(),
  size: Type.Integer(),
  signature: Type.String(),
})
const idParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })

/** Room for the multipart framing and the text fields around the image. */
const FRAMING_SLACK = 64 * 1024

const iso = (d: Date | null) => (d ? d.toISOString() : null)
const releaseOut = <T extends { createdAt: Date }>(r: T) => ({ ...r, createdAt: r.createdAt.toISOString() })
const rolloutOut = <T extends { haltedAt: Date | null; updatedAt: Date }>(r: T) => ({
  ...r,
  haltedAt: iso(r.haltedAt),
  updatedAt: r.updatedAt.toISOString(),
})

export async function firmwareRoutes(fastify: FastifyInstance, opts: { db: Database; firmware: FirmwareService; maxBytes: number }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db, firmware, maxBytes } = opts

  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: maxBytes, files: 1, fields: 4, fieldSize: 16 * 1024, parts: 5, headerPairs: 50 },
  })

  async function admin(req: Parameters<typeof principalOf>[0]): Promise<string> {
    const who = principalOf(req)
    const user = await findUserById(db, who.userId)
    if (!rolesOf(user?.role ?? null).includes('admin')) throw appError('FORBIDDEN', 'Only admins manage firmware')
    return who.userId
  }

  app.post(
    '/api/admin/firmware',
    {
      // The whole image is read into memory to hash and sign it: bounded by FIRMWARE_MAX_BYTES.
      bodyLimit: maxBytes + FRAMING_SLACK,
      schema: {
        tags,
        summary: 'Upload a firmware release (admins only)',
        description:
          'multipart/form-data: the fields `model`, `version` (semver), `channel` (stable | beta), `notes` (optional), then one file part. The service stores the image, computes its SHA-256 and size and signs its manifest with its Ed25519 key.',
        security,
        consumes: ['multipart/form-data'],
        'x-body': {
          type: 'object',
          required: ['model', 'version', 'channel', 'file'],
          properties: {
            model: { type: 'string', pattern: MODEL },
            version: { type: 'string' },
            channel: { type: 'string', enum: [...firmwareChannels] },
            notes: { type: 'string', maxLength: 4000 },
            file: { type: 'string', format: 'binary' },
          },
          // The text fields; the file part is the image's bytes, which a JSON example cannot hold.
          examples: [{ model: 'frame-7', version: '1.4.0', channel: 'stable', notes: 'Reconnects to Wi-Fi faster after sleep' }],
        },
        response: { 201: releaseRecord, ...errors(400, 401, 403, 409, 413) },
      },
    },
    async (req, reply) => {
      const actor = await admin(req)
      if (!req.isMultipart()) throw appError('MULTIPART_REQUIRED')
      const fields: Record<string, string> = {}
      let bytes: Buffer | undefined
      try {
        for await (const part of req.parts()) {
          if (part.type === 'file') bytes = await part.toBuffer()
          else if (part.valueTruncated) throw appError('VALIDATION_ERROR', `${part.fieldname}: too long`)
          else if (typeof part.value === 'string') fields[part.fieldname] = part.value
        }
      } catch (e) {
        const code = (e as { code?: string }).code
        if (code === 'FST_REQ_FILE_TOO_LARGE') throw appError('PAYLOAD_TOO_LARGE', `A firmware image is at most ${maxBytes} bytes`)
        if (code === 'FST_FILES_LIMIT') throw appError('TOO_MANY_FILES')
        if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') throw appError('TOO_MANY_PARTS')
        if (code === 'FST_PROTO_VIOLATION' || (e instanceof Error && /multipart|boundary|terminated early/i.test(e.message)))
          throw appError('INVALID_MULTIPART')
        throw e
      }
      if (!bytes) throw appError('FILE_REQUIRED')
      const model = fields.model ?? ''
      if (!new RegExp(MODEL).test(model)) throw appError('VALIDATION_ERROR', 'model: letters, digits, dot, dash and underscore, 1 to 64')
      const channel = (fields.channel ?? '') as FirmwareChannel
      if (!firmwareChannels.includes(channel)) throw appError('VALIDATION_ERROR', 'channel: stable or beta')
      const notes = fields.notes ?? ''
      if (notes.length > 4000) throw appError('VALIDATION_ERROR', 'notes: at most 4000 characters')
      const release = await firmware.publishRelease(actor, { model, version: fields.version ?? '', channel, notes, bytes })
      return reply.code(201).send(releaseOut(release))
    },
  )

  app.get(
    '/api/admin/firmware',
    {
      schema: {
        tags,
        summary: 'Firmware releases with their counts (admins only)',
        security,
        querystring: Type.Object({ model: Type.Optional(modelString) }, { additionalProperties: false }),
        response: { 200: Type.Object({ releases: Type.Array(releaseRecord) }), ...errors(400, 401, 403) },
      },
    },
    async (req) => {
      await admin(req)
      return { releases: (await firmware.releases(req.query.model)).map(releaseOut) }
    },
  )

  app.get(
    '/api/admin/firmware/:id',
    {
      schema: {
        tags,
        summary: 'One release: its counts and every device offered it, with its progress (admins only)',
        security,
        params: idParams,
        response: {
          200: Type.Intersect([
            releaseRecord,
            Type.Object({
              devices: Type.Array(
                Type.Object({
                  deviceId: Type.String(),
                  name: Type.String(),
                  firmware: nullableString,
                  state: Type.Union([StringEnum(otaStates), Type.Null()]),
                  reason: nullableString,
                  offeredAt: nullableString,
                  updatedAt: nullableString,
                }),
              ),
            }),
          ]),
          ...errors(401, 403, 404),
        },
      },
    },
    async (req) => {
      await admin(req)
      const r = await firmware.release(req.params.id)
      return {
        ...releaseOut(r),
        devices: r.devices.map((d) => ({ ...d, offeredAt: iso(d.offeredAt), updatedAt: iso(d.updatedAt) })),
      }
    },
  )

  app.delete(
    '/api/admin/firmware/:id',
    {
      schema: {
        tags,
        summary: 'Delete a release nothing uses (admins only)',
        security,
        params: idParams,
        response: { 204: Type.Null(), ...errors(401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      await firmware.removeRelease(await admin(req), req.params.id)
      return reply.code(204).send(null)
    },
  )

  app.get(
    '/api/admin/firmware-rollouts',
    {
      schema: {
        tags,
        summary: 'Every rollout with its counts (admins only)',
        security,
        response: { 200: Type.Object({ rollouts: Type.Array(rolloutRecord) }), ...errors(401, 403) },
      },
    },
    async (req) => {
      await admin(req)
      return { rollouts: (await firmware.rollouts()).map(rolloutOut) }
    },
  )

  app.put(
    '/api/admin/firmware-rollouts/:model/:channel',
    {
      schema: {
        tags,
        summary: "Set a model's rollout on a channel: target version, share of devices, pause or resume (admins only)",
        description:
          'Devices are in when a bucket of their id (0–99) is below `percent`, so raising it only adds devices. A new target or `paused: false` lifts a halt. The answer says how many devices were offered the release by this change.',
        security,
        params: Type.Object({ model: modelString, channel: StringEnum(firmwareChannels) }),
        body: Type.Object(
          {
            version: versionString,
            percent: Type.Integer({ minimum: 0, maximum: 100 }),
            paused: Type.Optional(Type.Boolean()),
            maxFailureShare: Type.Optional(
              Type.Number({ minimum: 0, maximum: 1, description: 'halt above this share of failed attempts' }),
            ),
            minAttempts: Type.Optional(
              Type.Integer({ minimum: 1, maximum: 100_000, description: 'ended attempts before a halt is considered' }),
            ),
          },
          { additionalProperties: false, examples: [{ version: '1.4.0', percent: 25 }] },
        ),
        response: {
          200: Type.Intersect([rolloutRecord, Type.Object({ offeredNow: Type.Integer() })]),
          ...errors(400, 401, 403, 404, 409),
        },
      },
    },
    async (req) => {
      const actor = await admin(req)
      return rolloutOut(await firmware.setRollout(actor, req.params.model, req.params.channel, req.body))
    },
  )

  app.put(
    '/api/admin/devices/:id/firmware',
    {
      schema: {
        tags,
        summary: "Set a device's firmware channel, fleet enrollment, or pin it to a version (admins only)",
        description:
          "A pin is offered whatever the device runs, an older version included; `pinnedVersion: null` lifts it. `fleet: true` enrolls the device in the fleet of the model it reports: rollouts reach only enrolled devices, and only their failures count towards a halt (a model a device declares is its own word). `fleet: false` takes it out, and takes back a rollout's offer it has not started on.",
        security,
        params: idParams,
        body: Type.Object(
          {
            channel: Type.Optional(StringEnum(firmwareChannels)),
            pinnedVersion: Type.Optional(Type.Union([versionString, Type.Null()])),
            fleet: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false, minProperties: 1, examples: [{ pinnedVersion: '1.4.0' }] },
        ),
        response: { 200: deviceFirmwareRecord, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => firmware.setDevice(await admin(req), req.params.id, req.body),
  )

  app.get(
    '/api/device/:id/firmware',
    {
      schema: {
        tags,
        summary: 'What a device runs, its channel and pin, and its current offer',
        security,
        params: idParams,
        response: { 200: deviceFirmwareRecord, ...errors(401, 404) },
      },
      preHandler: deviceAccess(db, 'read'),
    },
    async (req) => firmware.deviceState(deviceOf(req).id),
  )

  app.get(
    '/api/device/:id/firmware/offer',
    {
      // The device itself, with its secret (as on MQTT).
      config: { auth: 'none' },
      schema: {
        tags,
        summary: "The device's current firmware offer with a fresh download link",
        description: "For a device whose offer's link expired: `Authorization: Bearer <the device's secret>`. 404 when nothing is offered.",
        params: idParams,
        response: { 200: offerRecord, ...errors(401, 404) },
      },
    },
    async (req) => {
      const dev = await requireDeviceSecret(db, req.params.id, req.headers.authorization)
      const offer = await firmware.currentOffer(dev.id)
      if (offer.version === null) throw appError('NO_FIRMWARE_OFFER')
      return offer
    },
  )

  app.get(
    '/api/firmware/public-key',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'The Ed25519 public key firmware releases are signed with',
        response: {
          200: Type.Object({
            algorithm: Type.Literal('Ed25519'),
            publicKey: Type.String({ description: 'raw 32 bytes, base64' }),
            manifest: Type.String({ description: 'what is signed' }),
          }),
        },
      },
    },
    async () => ({
      algorithm: 'Ed25519' as const,
      publicKey: firmware.publicKey,
      manifest: 'dps-firmware-v1\\n{model}\\n{version}\\n{sha256 hex}\\n{size}\\n',
    }),
  )
}
