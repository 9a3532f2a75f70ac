// Any S3-compatible store (AWS, MinIO, R2, s3rver). Path-style addressing, and checksums only
// when the operation requires them: with the SDK's default checksums a streamed upload to some
// S3-compatible servers is stored with its chunk framing inside the object.
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { assertSafeKey, type ObjectMeta, type ObjectStore } from './store.js'

export type S3Options = { endpoint?: string; bucket: string; region: string; accessKeyId?: string; secretAccessKey?: string }

const notFound = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } }
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404
}

export function createS3Store(o: S3Options): ObjectStore {
  const client = new S3Client({
    region: o.region,
    endpoint: o.endpoint,
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: o.accessKeyId && o.secretAccessKey ? { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } : undefined,
  })
  const Bucket = o.bucket
  const toMeta = (key: string, r: { ContentLength?: number; ContentType?: string; ETag?: string; LastModified?: Date }): ObjectMeta => ({
    key,
    size: r.ContentLength ?? 0,
    contentType: r.ContentType ?? 'application/octet-stream',
    etag: r.ETag ?? '',
    lastModified: r.LastModified ?? new Date(0),
  })
  return {
    kind: 's3',
    async put(key, body, p) {
      assertSafeKey(key)
      const r = await client.send(
        new PutObjectCommand({
          Bucket,
          Key: key,
          Body: body,
          ContentType: p.contentType,
          CacheControl: p.cacheControl,
          ContentLength: body.length,
        }),
      )
      return { key, size: body.length, contentType: p.contentType, etag: r.ETag ?? '', lastModified: new Date() }
    },
    async get(key) {
      assertSafeKey(key)
      try {
        const r = await client.send(new GetObjectCommand({ Bucket, Key: key }))
        const body = Buffer.from(await (r.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())
        return { meta: { ...toMeta(key, r), size: body.length }, body }
      } catch (err) {
        if (notFound(err)) return null
        throw err
      }
    },
    async head(key) {
      assertSafeKey(key)
      try {
        return toMeta(key, await client.send(new HeadObjectCommand({ Bucket, Key: key })))
      } catch (err) {
        if (notFound(err)) return null
        throw err
      }
    },
    async delete(key) {
      assertSafeKey(key)
      await client.send(new DeleteObjectCommand({ Bucket, Key: key }))
    },
    async presign(key, p) {
      assertSafeKey(key)
      const cmd =
        p.method === 'PUT'
          ? new PutObjectCommand({ Bucket, Key: key, ContentType: p.contentType, ContentLength: p.contentLength })
          : new GetObjectCommand({ Bucket, Key: key })
      return getSignedUrl(client, cmd, { expiresIn: p.expiresIn })
    },
    async close() {
      client.destroy()
    },
  }
}
