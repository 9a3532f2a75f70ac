import { and, eq, gt, inArray, isNotNull, lte, ne, or } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import { session, user } from '../db/schema.js'

export type UserRow = typeof user.$inferSelect

export async function grantConfiguredAdmin(db: Database, userId: string): Promise<void> {
  await db
    .update(user)
    .set({ role: 'admin', updatedAt: new Date() })
    .where(and(eq(user.id, userId), ne(user.role, 'admin')))
}

export async function findUserById(db: Database, userId: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(user).where(eq(user.id, userId)).limit(1)
  return row
}

export async function findUserByEmail(db: Database, email: string): Promise<UserRow | undefined> {
  const [row] = await db.select().from(user).where(eq(user.email, email.toLowerCase())).limit(1)
  return row
}

/** A session that still exists and has not expired (revocation deletes the row). */
export async function findLiveSession(db: Database, id: string): Promise<{ id: string; userId: string; expiresAt: Date } | undefined> {
  const [row] = await db
    .select({ id: session.id, userId: session.userId, expiresAt: session.expiresAt })
    .from(session)
    .where(and(eq(session.id, id), gt(session.expiresAt, new Date())))
    .limit(1)
  return row
}

/**
 * Which of several sessions still act for someone: not revoked (revocation deletes the row), not
 * expired, and their user not banned. The broker asks after every revocation, for the sessions
 * its companion apps connected with.
 */
export async function liveSessionIds(db: Database, ids: readonly string[]): Promise<Set<string>> {
  if (!ids.length) return new Set()
  const now = new Date()
  const rows = await db
    .select({ id: session.id })
    .from(session)
    .innerJoin(user, eq(user.id, session.userId))
    .where(
      and(
        inArray(session.id, [...ids]),
        gt(session.expiresAt, now),
        or(eq(user.banned, false), and(isNotNull(user.banExpires), lte(user.banExpires, now))),
      ),
    )
  return new Set(rows.map((r) => r.id))
}
