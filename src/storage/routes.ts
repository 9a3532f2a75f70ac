// /files/<key>: the filesystem store's presigned URLs (see fs-store.ts) land here. GET serves an
// object, PUT stores one, each only with a valid, unexpired signature for that method and key.
// Registered only when the filesystem store is in use; S3 serves its own presigned URLs.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { appError } from '../errors.js'
import { verifyFileSignature } from './fs-store.js'
import { assertSafeKey, type ObjectStore } from './store.js'

const err = { $ref: 'Error#' }
const tags = ['admin API']
const querystring = Type.Object({ expires: Type.Integer({ minimum: 0 }), sig: Type.String({ minLength: 1, maxLength: 128 }) })
const params = Type.Object({ '*': Type.String({ minLength: 1, maxLength: 512 }) })

// Static types rather than the TypeBox type provider: these routes answer with raw bytes, which
// the provider would check against their `format: binary` string response schemas.
type FileRequest = { Params: Static<typeof params>; Querystring: Static<typeof querystring> }

/** Images are shown inline; anything else is a download, and nothing served here may run script. */
const inlineTypes = /^image\/(png|jpeg|webp|gif|avif|bmp)$/

export async function fileRoutes(app: FastifyInstance, opts: { store: ObjectStore; secret: string; maxBytes: number }) {
  const { store, secret } = opts

  // Presigned PUTs carry raw bytes of any type; only this plugin sees them as one buffer.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.maxBytes }, (_req, body, done) => done(null, body))

  function checkedKey(req: FastifyRequest<FileRequest>, method: 'GET' | 'PUT'): string {
    const key = req.params['*']
    const { expires, sig } = req.query
    if (expires * 1000 < Date.now()) throw appError('URL_EXPIRED')
    if (!verifyFileSignature(secret, method, key, expires, sig)) throw appError('INVALID_SIGNATURE')
    try {
      assertSafeKey(key)
    } catch {
      throw appError('INVALID_KEY')
    }
    return key
  }

  app.get<FileRequest>(
    '/files/*',
    {
      // The presigned link's signature is the credential (checked by the handler).
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Download an object through a presigned link',
        params,
        querystring,
        response: { 200: { type: 'string', format: 'binary' }, 304: { type: 'null' }, 400: err, 403: err, 404: err },
      },
    },
    async (req, reply) => {
      const key = checkedKey(req, 'GET')
      const obj = await store.get(key)
      if (!obj) throw appError('NOT_FOUND', 'No such object')
      const ttl = Math.max(0, req.query.expires - Math.floor(Date.now() / 1000))
      reply
        .header('content-type', obj.meta.contentType)
        .header('etag', obj.meta.etag)
        .header('last-modified', obj.meta.lastModified.toUTCString())
        .header('cache-control', `private, max-age=${ttl}`)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
      if (!inlineTypes.test(obj.meta.contentType)) reply.header('content-disposition', 'attachment')
      if (req.headers['if-none-match'] === obj.meta.etag) return reply.code(304).send()
      return reply.send(obj.body)
    },
  )

  app.put<FileRequest & { Body: Buffer }>(
    '/files/*',
    {
      config: { auth: 'none' },
      schema: {
        tags,
        summary: 'Upload an object through a presigned link',
        params,
        querystring,
        consumes: ['application/octet-stream'],
        // Documented only (see openapi/register.ts): the bytes arrive through the buffer parser.
        ...({
          'x-body': { type: 'string', format: 'binary', description: 'the bytes to store; send the Content-Type the link was made for' },
        } as object),
        response: { 200: { type: 'null' }, 400: err, 403: err, 413: err },
      },
    },
    async (req, reply) => {
      const key = checkedKey(req, 'PUT')
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
      const contentType = (req.headers['content-type'] ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase()
      const meta = await store.put(key, body, { contentType })
      return reply.code(200).header('etag', meta.etag).send()
    },
  )
}
