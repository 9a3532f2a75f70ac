// From original bytes to images a display can show: store the original at once (provider URLs
// expire within the hour), convert for the device's profile, store each variant, record them.
import { createHash, randomUUID } from 'node:crypto'
import type { Database } from '../db/client.js'
import type { ObjectStore } from '../storage/store.js'
import type { ConversionPool } from './conversion-pool.js'
import { loadSharp } from './sharp.js'
import type { DisplayProfile, Variant } from './profiles.js'
import { insertImage, type ImageRow, type VariantRow } from './repository.js'

const IMMUTABLE = 'public, max-age=31536000, immutable'
const extFor: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/avif': 'avif',
  'image/bmp': 'bmp',
}
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

export type StoredImage = { image: ImageRow; variants: VariantRow[] }

/** Names a display profile: what is converted once per distinct display is remembered under this key. */
export const profileKey = (p: DisplayProfile) => createHash('sha256').update(JSON.stringify(p)).digest('hex').slice(0, 16)

export function imageUrl(baseUrl: string, imageId: string, format: string): string {
  return `${baseUrl}/api/images/${imageId}/${format}`
}

export async function storeImage(
  deps: { db: Database; storage: ObjectStore; images: ConversionPool },
  input: {
    userId: string
    deviceId?: string | null
    jobId?: string | null
    source: ImageRow['source']
    original: Buffer
    profile?: DisplayProfile | null
    imageId?: string
    /** The profile's variants when the caller converted already (a screen compares their bytes before storing). */
    converted?: Variant[]
  },
): Promise<StoredImage> {
  const meta = await (await loadSharp())(input.original).metadata()
  const contentType = meta.format === 'jpeg' ? 'image/jpeg' : `image/${meta.format ?? 'png'}`
  const id = input.imageId ?? randomUUID()
  const originalKey = `images/${id}/original.${extFor[contentType] ?? 'bin'}`
  // The original is written while the worker converts it: the two wait on different things.
  const originalPut = deps.storage.put(originalKey, input.original, { contentType, cacheControl: IMMUTABLE })
  // Observed at once (a write failing during the conversion is no unhandled rejection), and
  // awaited below either way: this function never returns with a write still running.
  originalPut.catch(() => {})
  // In a worker, queued behind the same account's conversions only (conversion-pool.ts).
  const converted =
    input.converted ??
    (input.profile ? await deps.images.convert(input.userId, input.original, input.profile).finally(() => originalPut.catch(() => {})) : [])
  await originalPut
  const variants: VariantRow[] = converted.map((v) => ({
    imageId: id,
    format: v.format,
    key: `images/${id}/${v.format}.${extFor[v.contentType] ?? 'bin'}`,
    contentType: v.contentType,
    width: v.width,
    height: v.height,
    bytes: v.data.length,
    sha256: sha256(v.data),
  }))
  await Promise.all(
    converted.map((v, i) => deps.storage.put(variants[i]!.key, v.data, { contentType: v.contentType, cacheControl: IMMUTABLE })),
  )
  const image = await insertImage(
    deps.db,
    {
      id,
      userId: input.userId,
      deviceId: input.deviceId ?? null,
      jobId: input.jobId ?? null,
      source: input.source,
      originalKey,
      contentType,
      width: meta.width ?? 0,
      height: meta.height ?? 0,
      bytes: input.original.length,
      sha256: sha256(input.original),
      profile: input.profile ?? null,
    },
    variants,
  )
  return { image, variants }
}
