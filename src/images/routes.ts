// Stable image URLs for devices and apps: /api/images/{imageId}/{format}. Image ids are random
// UUIDs handed only to the owner and their devices (capability URLs: a display fetches them
// without an account). Content never changes under a URL, so it is cached for a year.
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import type { Database } from '../db/client.js'
import { appError } from '../errors.js'
import type { ObjectStore } from '../storage/store.js'
import { findImageFile } from './repository.js'

const params = Type.Object({ id: Type.String({ format: 'uuid' }), format: Type.String({ pattern: '^[a-z0-9-]{1,20}$' }) })

export async function imageRoutes(app: FastifyInstance, opts: { db: Database; storage: ObjectStore }) {
  const { db, storage } = opts
  // Static types rather than the TypeBox type provider: the answer is raw bytes, which the provider
  // would check against the `format: binary` string response schema.
  app.get<{ Params: Static<typeof params> }>(
    '/api/images/:id/:format',
    {
      // Image ids are unguessable: devices fetch them with no credential.
      config: { auth: 'none' },
      schema: {
        tags: ['device module'],
        summary: 'An image file: the original or a display format (bmp1, png1, png-gray4, png-spectra6, png-acep7, jpeg, png)',
        params,
        response: {
          200: { type: 'string', format: 'binary', description: 'image bytes' },
          304: { type: 'null', description: 'not modified' },
          400: { $ref: 'Error#' },
          404: { $ref: 'Error#' },
        },
      },
    },
    async (req, reply) => {
      const { id, format } = req.params
      // A variant row exists only with its image (a foreign key), so it alone answers for a format.
      const file = await findImageFile(db, id, format)
      if (!file) throw appError('IMAGE_NOT_FOUND')
      const etag = `"${file.sha256}"`
      reply.header('etag', etag).header('cache-control', 'public, max-age=31536000, immutable')
      if (req.headers['if-none-match'] === etag) return reply.code(304).send()
      const obj = await storage.get(file.key)
      if (!obj) throw appError('IMAGE_NOT_FOUND')
      return reply.type(obj.meta.contentType).header('content-length', obj.body.length).send(obj.body)
    },
  )
}
