// Upload routes. @fastify/multipart is registered inside this encapsulated plugin, so its
// multipart parser exists only here and cannot touch the Better Auth mount's raw parsers.
import multipart from '@fastify/multipart'
import { principalOf } from '../auth/route-auth.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { Auth } from '../auth/auth.js'
import type { Database } from '../db/client.js'
import { callerSecurity as security } from '../http/route-schemas.js'
import { appError } from '../errors.js'
import { exampleIds } from '../openapi/examples.js'
import { acceptedContentTypes } from './images.js'
import type { UploadSender } from './send.js'
import { tooLarge, type UploadService } from './service.js'

const err = { $ref: 'Error#' }
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, err]))
const tags = ['admin API']
const keyString = Type.String({ minLength: 1, maxLength: 512 })

const uploadRecord = {
  type: 'object',
  required: ['key', 'url', 'urlExpiresAt', 'size', 'contentType', 'width', 'height'],
  properties: {
    key: { type: 'string', description: 'uploads/<userId>/<uuid>.<ext>' },
    url: { type: 'string', description: 'a signed link to the stored image' },
    urlExpiresAt: { type: 'string', format: 'date-time' },
    size: { type: 'integer', description: 'bytes as stored (after metadata was stripped)' },
    contentType: { type: 'string', enum: [...acceptedContentTypes] },
    width: { type: 'integer' },
    height: { type: 'integer' },
  },
} as const

/** Room for the multipart framing and headers around the file itself. */
const FRAMING_SLACK = 64 * 1024

export async function uploadRoutes(
  fastify: FastifyInstance,
  opts: { auth: Auth; db: Database; uploads: UploadService; send: UploadSender; maxBytes: number },
) {
  // Request types are inferred from the TypeBox schemas below.
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { uploads, send, maxBytes } = opts
  const caller = async (req: FastifyRequest) => principalOf(req)

  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: maxBytes, files: 1, fields: 10, fieldSize: 4096, parts: 11, headerPairs: 50 },
  })

  app.post(
    '/api/upload',
    {
      schema: {
        tags,
        summary: 'Upload file to object storage',
        description:
          'multipart/form-data with exactly one file part (any field name). The type is read from the bytes: PNG, JPEG, WebP, GIF and AVIF are accepted (415 otherwise). ' +
          'The image is re-encoded without metadata (EXIF orientation applied) and stored under a key of your own.',
        security,
        consumes: ['multipart/form-data'],
        'x-body': {
          type: 'object',
          required: ['file'],
          properties: { file: { type: 'string', format: 'binary', description: 'the image (one file part; any field name works)' } },
        },
        response: { 201: uploadRecord, ...errors(400, 401, 413, 415, 422) },
      },
    },
    async (req, reply) => {
      const who = await caller(req)
      if (!req.isMultipart()) throw appError('MULTIPART_REQUIRED')
      const declared = Number(req.headers['content-length'] ?? 0)
      if (declared > maxBytes + FRAMING_SLACK) throw tooLarge(maxBytes)
      let file: Buffer | undefined
      try {
        for await (const part of req.parts()) {
          if (part.type !== 'file') continue
          file = await part.toBuffer()
        }
      } catch (e) {
        const code = (e as { code?: string }).code
        if (code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(maxBytes)
        if (code === 'FST_FILES_LIMIT') throw appError('TOO_MANY_FILES')
        if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') throw appError('TOO_MANY_PARTS')
        if (e instanceof Error && /multipart|boundary|terminated early/i.test(e.message)) throw appError('INVALID_MULTIPART')
        throw e
      }
      if (!file) throw appError('FILE_REQUIRED')
      return reply.code(201).send(await uploads.storeImage(who.userId, file))
    },
  )

  app.get(
    '/api/upload/url',
    {
      schema: {
        tags,
        summary: 'A fresh signed link to one of your uploads',
        security,
        querystring: Type.Object({ key: keyString }, { additionalProperties: false }),
        response: {
          200: {
            type: 'object',
            required: ['key', 'url', 'urlExpiresAt'],
            properties: { key: { type: 'string' }, url: { type: 'string' }, urlExpiresAt: { type: 'string', format: 'date-time' } },
          },
          ...errors(400, 401, 404),
        },
      },
    },
    async (req) => uploads.urlFor((await caller(req)).userId, req.query.key),
  )

  app.post(
    '/api/upload/presign',
    {
      schema: {
        tags,
        summary: 'A presigned PUT for a direct upload to object storage',
        description:
          'PUT the bytes to `url` with the given headers, then call POST /api/upload/complete with the key: the file is checked and cleaned like a multipart upload.',
        security,
        body: Type.Object(
          { contentType: Type.String({ enum: [...acceptedContentTypes] }), size: Type.Integer({ minimum: 1 }) },
          { additionalProperties: false, examples: [{ contentType: 'image/jpeg', size: 482113 }] },
        ),
        response: {
          200: {
            type: 'object',
            required: ['key', 'url', 'method', 'headers', 'expiresAt'],
            properties: {
              key: { type: 'string' },
              url: { type: 'string' },
              method: { type: 'string', enum: ['PUT'] },
              headers: { type: 'object', additionalProperties: { type: 'string' } },
              expiresAt: { type: 'string', format: 'date-time' },
            },
          },
          ...errors(400, 401, 413),
        },
      },
    },
    async (req) => uploads.presignDirect((await caller(req)).userId, req.body.contentType, req.body.size),
  )

  app.post(
    '/api/upload/complete',
    {
      schema: {
        tags,
        summary: 'Finish a direct upload',
        security,
        body: Type.Object({ key: keyString }, { additionalProperties: false, examples: [{ key: exampleIds.incomingKey }] }),
        response: { 201: uploadRecord, ...errors(400, 401, 404, 413, 415, 422) },
      },
    },
    async (req, reply) => reply.code(201).send(await uploads.completeDirect((await caller(req)).userId, req.body.key)),
  )

  app.post(
    '/api/upload/send',
    {
      schema: {
        tags,
        summary: 'Send an uploaded image to a device',
        description:
          "Converts one of your uploads for the device's display (size, palette, dithering) like a generated image and publishes it to devices/{id}/image. " +
          'Needs the right to manage the device (its owner, or an admin of its organization).',
        security,
        body: Type.Object(
          { key: keyString, deviceId: Type.String({ minLength: 1, maxLength: 64 }) },
          { additionalProperties: false, examples: [{ key: exampleIds.uploadKey, deviceId: exampleIds.deviceId }] },
        ),
        response: {
          200: {
            type: 'object',
            required: ['imageId', 'deviceId', 'image'],
            properties: {
              imageId: { type: 'string' },
              deviceId: { type: 'string' },
              image: {
                type: 'object',
                description: 'what the device was sent on devices/{id}/image',
                properties: {
                  imageId: { type: 'string' },
                  url: { type: 'string' },
                  format: { type: 'string' },
                  width: { type: 'integer' },
                  height: { type: 'integer' },
                  bytes: { type: 'integer' },
                  sha256: { type: 'string' },
                  contentType: { type: 'string' },
                },
              },
            },
          },
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (req) => send((await caller(req)).userId, req.body.key, req.body.deviceId),
  )
}
