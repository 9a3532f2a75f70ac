// Balance changes: one conditional UPDATE (so two jobs cannot both spend the last credit) and
// one ledger row, inside the caller's transaction.
import { randomUUID } from 'node:crypto'
import { and, desc, eq, gte, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { user } from '../db/schema.js'
import { creditLedger } from './tables.js'

export type LedgerRow = typeof creditLedger.$inferSelect

/** Takes `amount` from the balance if it covers it; returns the new balance, or null when short. */
export async function debit(db: Executor, userId: string, amount: string, jobId: string): Promise<string | null> {
  const [row] = await db
    .update(user)
    .set({ balance: sql`${user.balance} - ${amount}::numeric` })
    .where(and(eq(user.id, userId), gte(user.balance, sql`${amount}::numeric`)))
    .returning({ balance: user.balance })
  if (!row) return null
  await db
    .insert(creditLedger)
    .values({ id: randomUUID(), userId, amount: `-${amount}`, balanceAfter: row.balance, reason: 'generation', jobId })
  return row.balance
}

export async function credit(
  db: Executor,
  userId: string,
  amount: string,
  entry: { reason: 'refund' | 'admin_credit'; jobId?: string; actorId?: string; note?: string },
): Promise<string | null> {
  const [row] = await db
    .update(user)
    .set({ balance: sql`${user.balance} + ${amount}::numeric` })
    .where(eq(user.id, userId))
    .returning({ balance: user.balance })
  if (!row) return null
  await db.insert(creditLedger).values({ id: randomUUID(), userId, amount, balanceAfter: row.balance, ...entry })
  return row.balance
}

export async function balanceOf(db: Executor, userId: string): Promise<string | null> {
  const [row] = await db.select({ balance: user.balance }).from(user).where(eq(user.id, userId)).limit(1)
  return row?.balance ?? null
}

export async function listLedger(db: Executor, userId: string, limit: number): Promise<LedgerRow[]> {
  return db
    .select()
    .from(creditLedger)
    .where(eq(creditLedger.userId, userId))
    .orderBy(desc(creditLedger.createdAt), desc(creditLedger.id))
    .limit(limit)
}
