// The only module that reads or writes push subscriptions and notification preferences.
import { randomUUID } from 'node:crypto'
import { and, asc, eq, inArray, notInArray, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { notificationPreference, pushSubscription } from './tables.js'

export type PushSubscriptionRow = typeof pushSubscription.$inferSelect
type PreferenceRow = typeof notificationPreference.$inferSelect
export type Preferences = Pick<PreferenceRow, 'generationResults' | 'devicePresence' | 'batteryLow' | 'deviceSilent' | 'firmwareFailed'>

const defaultPreferences: Preferences = {
  generationResults: true,
  devicePresence: true,
  batteryLow: true,
  deviceSilent: true,
  firmwareFailed: true,
}
const preferencesOf = (r: PreferenceRow): Preferences => ({
  generationResults: r.generationResults,
  devicePresence: r.devicePresence,
  batteryLow: r.batteryLow,
  deviceSilent: r.deviceSilent,
  firmwareFailed: r.firmwareFailed,
})

export type NewSubscription = { endpoint: string; p256dh: string; auth: string; expirationTime: Date | null; userAgent: string | null }

/** Inserts or takes over the subscription with this endpoint (a browser re-subscribing, maybe as another user). */
export async function upsertSubscription(
  db: Executor,
  userId: string,
  s: NewSubscription,
): Promise<{ row: PushSubscriptionRow; created: boolean }> {
  const id = randomUUID()
  const [row] = await db
    .insert(pushSubscription)
    .values({ id, userId, ...s })
    .onConflictDoUpdate({
      target: pushSubscription.endpoint,
      set: { userId, p256dh: s.p256dh, auth: s.auth, expirationTime: s.expirationTime, userAgent: s.userAgent, failureCount: 0 },
    })
    .returning()
  return { row: row as PushSubscriptionRow, created: row!.id === id }
}

export async function listSubscriptions(db: Executor, userId: string): Promise<PushSubscriptionRow[]> {
  return db
    .select()
    .from(pushSubscription)
    .where(eq(pushSubscription.userId, userId))
    .orderBy(asc(pushSubscription.createdAt), asc(pushSubscription.id))
}

/** Deletes the user's oldest subscriptions beyond `keep`. */
export async function trimSubscriptions(db: Executor, userId: string, keep: number): Promise<number> {
  const newest = db
    .select({ id: pushSubscription.id })
    .from(pushSubscription)
    .where(eq(pushSubscription.userId, userId))
    .orderBy(sql`${pushSubscription.createdAt} DESC`, sql`${pushSubscription.id} DESC`)
    .limit(keep)
  const removed = await db
    .delete(pushSubscription)
    .where(and(eq(pushSubscription.userId, userId), notInArray(pushSubscription.id, newest)))
    .returning({ id: pushSubscription.id })
  return removed.length
}

/** Deletes one of the user's subscriptions, named by id or endpoint; undefined when it is not theirs. */
export async function deleteOwnSubscription(
  db: Executor,
  userId: string,
  by: { id?: string; endpoint?: string },
): Promise<PushSubscriptionRow | undefined> {
  const match = by.id ? eq(pushSubscription.id, by.id) : eq(pushSubscription.endpoint, by.endpoint ?? '')
  const [row] = await db
    .delete(pushSubscription)
    .where(and(eq(pushSubscription.userId, userId), match))
    .returning()
  return row
}

export async function deleteSubscriptions(db: Executor, ids: string[]): Promise<void> {
  if (ids.length) await db.delete(pushSubscription).where(inArray(pushSubscription.id, ids))
}

export async function recordDelivery(db: Executor, id: string, ok: boolean, at: Date): Promise<void> {
  await db
    .update(pushSubscription)
    .set(ok ? { lastSuccessAt: at, failureCount: 0 } : { lastFailureAt: at, failureCount: sql`${pushSubscription.failureCount} + 1` })
    .where(eq(pushSubscription.id, id))
}

export async function findPreferences(db: Executor, userId: string): Promise<Preferences> {
  const [row] = await db.select().from(notificationPreference).where(eq(notificationPreference.userId, userId)).limit(1)
  return row ? preferencesOf(row) : { ...defaultPreferences }
}

export async function updatePreferences(db: Executor, userId: string, patch: Partial<Preferences>): Promise<Preferences> {
  const [row] = await db
    .insert(notificationPreference)
    .values({ userId, ...defaultPreferences, ...patch })
    .onConflictDoUpdate({ target: notificationPreference.userId, set: { ...patch, updatedAt: new Date() } })
    .returning()
  return preferencesOf(row!)
}
