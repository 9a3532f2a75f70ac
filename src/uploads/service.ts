// Stores users' uploads: every stored object is a clean image under uploads/<userId>/<uuid>.<ext>.
// Direct uploads (presigned PUT) land under incoming/<userId>/ and become uploads only after the
// same checks, on completion.
import { randomUUID } from 'node:crypto'
import { appError } from '../errors.js'
import type { ObjectStore } from '../storage/store.js'
import { cleanImage, type AcceptedContentType } from './images.js'

export type UploadRecord = {
  key: string
  url: string
  urlExpiresAt: string
  size: number
  contentType: AcceptedContentType
  width: number
  height: number
}

/** Signed download links live this long; GET /api/upload/url issues a fresh one. */
const URL_TTL_SECONDS = 3600
const DIRECT_PUT_TTL_SECONDS = 900

export const ownsKey = (userId: string, key: string, prefix = 'uploads') => key.startsWith(`${prefix}/${userId}/`) && !key.includes('..')

export function createUploadService(opts: { store: ObjectStore; maxBytes: number }) {
  const { store } = opts

  async function signedUrl(key: string) {
    const url = await store.presign(key, { method: 'GET', expiresIn: URL_TTL_SECONDS })
    return { url, urlExpiresAt: new Date(Date.now() + URL_TTL_SECONDS * 1000).toISOString() }
  }

  async function storeImage(userId: string, input: Buffer): Promise<UploadRecord> {
    if (input.length > opts.maxBytes) throw tooLarge(opts.maxBytes)
    const img = await cleanImage(input)
    // The client's file name is never part of the key.
    const key = `uploads/${userId}/${randomUUID()}.${img.ext}`
    const meta = await store.put(key, img.body, { contentType: img.contentType, cacheControl: 'private, max-age=31536000, immutable' })
    return { key, ...(await signedUrl(key)), size: meta.size, contentType: img.contentType, width: img.width, height: img.height }
  }

  return {
    storeImage,

    async urlFor(userId: string, key: string) {
      if (!ownsKey(userId, key) || !(await store.head(key).catch(() => null))) throw appError('NOT_FOUND', 'No such upload of yours')
      return { key, ...(await signedUrl(key)) }
    },

    async presignDirect(userId: string, contentType: string, size: number) {
      if (size > opts.maxBytes) throw tooLarge(opts.maxBytes)
      const key = `incoming/${userId}/${randomUUID()}`
      const url = await store.presign(key, { method: 'PUT', expiresIn: DIRECT_PUT_TTL_SECONDS, contentType, contentLength: size })
      return {
        key,
        url,
        method: 'PUT' as const,
        headers: { 'content-type': contentType },
        expiresAt: new Date(Date.now() + DIRECT_PUT_TTL_SECONDS * 1000).toISOString(),
      }
    },

    /** Checks a direct upload like a multipart one, stores the clean copy, and removes what the client sent. */
    async completeDirect(userId: string, key: string): Promise<UploadRecord> {
      if (!ownsKey(userId, key, 'incoming')) throw appError('NOT_FOUND', 'No such direct upload of yours')
      const head = await store.head(key).catch(() => null)
      if (!head) throw appError('NOT_FOUND', 'Nothing was uploaded to that key')
      try {
        if (head.size > opts.maxBytes) throw tooLarge(opts.maxBytes)
        const obj = await store.get(key)
        if (!obj) throw appError('NOT_FOUND', 'Nothing was uploaded to that key')
        return await storeImage(userId, obj.body)
      } finally {
        await store.delete(key)
      }
    },
  }
}

export function tooLarge(maxBytes: number) {
  return appError('PAYLOAD_TOO_LARGE', `The file is larger than the upload limit of ${maxBytes} bytes`)
}

export type UploadService = ReturnType<typeof createUploadService>
