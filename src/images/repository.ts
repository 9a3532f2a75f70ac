import { and, eq, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { device } from '../devices/tables.js'
import { image, imageVariant } from './tables.js'

export type ImageRow = typeof image.$inferSelect
export type VariantRow = typeof imageVariant.$inferSelect

export async function insertImage(
  db: Executor,
  row: typeof image.$inferInsert,
  variants: Array<typeof imageVariant.$inferInsert>,
): Promise<ImageRow> {
  // A job stores its image seconds or minutes after it looked its device up; a device deleted meanwhile leaves
  // the image without one (as its deletion does to stored images) instead of failing the job.
  const deviceId = row.deviceId ? sql`(select ${device.id} from ${device} where ${device.id} = ${row.deviceId})` : null
  const [created] = await db
    .insert(image)
    .values({ ...row, deviceId })
    .returning()
  if (variants.length) await db.insert(imageVariant).values(variants)
  return created as ImageRow
}

export async function findImage(db: Executor, id: string): Promise<ImageRow | undefined> {
  const [row] = await db.select().from(image).where(eq(image.id, id)).limit(1)
  return row
}

export async function findVariants(db: Executor, imageId: string): Promise<VariantRow[]> {
  return db.select().from(imageVariant).where(eq(imageVariant.imageId, imageId))
}

/** Where one file of an image is stored and its SHA-256: the original or a display format, in one query. */
export async function findImageFile(db: Executor, id: string, format: string): Promise<{ key: string; sha256: string } | undefined> {
  if (format === 'original') {
    const [row] = await db.select({ key: image.originalKey, sha256: image.sha256 }).from(image).where(eq(image.id, id)).limit(1)
    return row
  }
  const [row] = await db
    .select({ key: imageVariant.key, sha256: imageVariant.sha256 })
    .from(imageVariant)
    .where(and(eq(imageVariant.imageId, id), eq(imageVariant.format, format)))
    .limit(1)
  return row
}
