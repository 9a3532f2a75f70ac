// The only module that reads or writes service_setting rows.
import { eq } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { serviceSetting } from './tables.js'

async function findSetting(db: Executor, key: string): Promise<string | undefined> {
  const [row] = await db.select({ value: serviceSetting.value }).from(serviceSetting).where(eq(serviceSetting.key, key)).limit(1)
  return row?.value
}

/**
 * Stores `value` unless the key already has one, and returns whichever value is stored: when
 * several instances start at once, they all end up with the first one written.
 */
export async function insertSettingOnce(db: Executor, key: string, value: string): Promise<string> {
  await db.insert(serviceSetting).values({ key, value }).onConflictDoNothing({ target: serviceSetting.key })
  return (await findSetting(db, key)) as string
}
