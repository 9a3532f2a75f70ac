// One drizzle database for the whole process: PGlite on disk by default, PostgreSQL when configured.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import postgres from 'postgres'
import { fileURLToPath } from 'node:url'
import * as authTables from './schema.js'
import * as deviceTables from '../devices/tables.js'
import * as eventTables from '../events/tables.js'
import * as promptTables from '../prompts/tables.js'
import * as generationTables from '../generation/tables.js'
import * as imageTables from '../images/tables.js'
import * as creditTables from '../credits/tables.js'
import * as settingTables from '../settings/tables.js'
import * as notificationTables from '../notifications/tables.js'
import * as downlinkTables from '../downlink/tables.js'
import * as scheduleTables from '../schedules/tables.js'
import * as deviceLogTables from '../device-logs/tables.js'
import * as healthTables from '../health/tables.js'
import * as firmwareTables from '../firmware/tables.js'
import * as trmnlTables from '../trmnl/tables.js'

const schema = {
  ...authTables,
  ...deviceTables,
  ...eventTables,
  ...promptTables,
  ...generationTables,
  ...imageTables,
  ...creditTables,
  ...settingTables,
  ...notificationTables,
  ...downlinkTables,
  ...scheduleTables,
  ...deviceLogTables,
  ...healthTables,
  ...firmwareTables,
  ...trmnlTables,
}

type Schema = typeof schema
export type Database = PgDatabase<PgQueryResultHKT, Schema>

export type DatabaseHandle = {
  db: Database
  kind: 'pglite' | 'postgres'
  migrate(): Promise<void>
  close(): Promise<void>
}

export const migrationsFolder = fileURLToPath(new URL('../../migrations', import.meta.url))

export function openDatabase(opts: { databaseUrl?: string; dataDir: string }): DatabaseHandle {
  if (opts.databaseUrl) {
    const sql = postgres(opts.databaseUrl, { max: 10, onnotice: () => {} })
    const db = drizzlePostgres(sql, { schema })
    return {
      db: db as unknown as Database,
      kind: 'postgres',
      migrate: () => migratePostgres(db, { migrationsFolder }),
      close: () => sql.end({ timeout: 5 }),
    }
  }
  const dir = join(opts.dataDir, 'pglite')
  mkdirSync(dir, { recursive: true })
  const client = new PGlite(dir)
  const db = drizzlePglite(client, { schema })
  return {
    db: db as unknown as Database,
    kind: 'pglite',
    migrate: () => migratePglite(db, { migrationsFolder }),
    close: () => client.close(),
  }
}

/** The rows of a raw `db.execute()`: PGlite wraps them in `{ rows }`, postgres.js returns the array. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows?: T[] }).rows ?? (result as T[])
}

type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0]
/** Either the database or an open transaction: repositories accept both. */
export type Executor = Database | Transaction
