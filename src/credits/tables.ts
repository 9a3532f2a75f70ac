import { index, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { user } from '../db/schema.js'

/** Every change of a balance, with the balance after it: the ledger always adds up to user.balance. */
export const creditLedger = pgTable(
  'credit_ledger',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    amount: numeric('amount', { precision: 14, scale: 2 }).notNull(),
    balanceAfter: numeric('balance_after', { precision: 14, scale: 2 }).notNull(),
    reason: text('reason').$type<'generation' | 'refund' | 'admin_credit'>().notNull(),
    jobId: text('job_id'),
    actorId: text('actor_id'),
    note: text('note'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('credit_ledger_user_idx').on(t.userId, t.createdAt)],
)
