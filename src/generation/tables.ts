import { index, integer, jsonb, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { user } from '../db/schema.js'
import { device } from '../devices/tables.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

export const jobStatuses = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const
export type JobStatus = (typeof jobStatuses)[number]

/** A generation job is a row before any provider call, so nothing is lost across restarts. */
export const generationJob = pgTable(
  'generation_job',
  {
    id: text('id').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => user.id, { onDelete: 'cascade' }),
    // Jobs belong to the user (credits were spent on them): a deleted device only stops being their target.
    deviceId: text('device_id').references(() => device.id, { onDelete: 'set null' }),
    promptId: text('prompt_id'),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    input: jsonb('input').$type<Record<string, unknown>>().notNull(),
    status: text('status').$type<JobStatus>().notNull().default('queued'),
    progress: integer('progress').notNull().default(0),
    providerJobId: text('provider_job_id'),
    providerState: jsonb('provider_state').$type<Record<string, unknown>>().notNull().default({}),
    price: numeric('price', { precision: 14, scale: 2 }).notNull().default('0'),
    attempts: integer('attempts').notNull().default(0),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    imageId: text('image_id'),
    nextPollAt: ts('next_poll_at').notNull().defaultNow(),
    // A runner holds a job while it works on it; another instance takes it over after expiry.
    leaseUntil: ts('lease_until'),
    deadlineAt: ts('deadline_at').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
  },
  (t) => [index('generation_job_due_idx').on(t.status, t.nextPollAt), index('generation_job_user_idx').on(t.userId, t.createdAt)],
)
