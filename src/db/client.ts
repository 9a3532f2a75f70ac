// One drizzle database for the whole process: PGlite on disk by default, PostgreSQL when configured.
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import postgres from 'postgres'
import { fromRoot } from '../paths.js'
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
import * as screenTables from '../screens/tables.js'

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
  ...screenTables,
}

type Schema = typeof schema
export type Database = PgDatabase<PgQueryResultHKT, Schema>

export type DatabaseHandle = {
  db: Database
  kind: 'pglite' | 'postgres'
  migrate(): Promise<void>
  close(): Promise<void>
}

export const migrationsFolder = fromRoot('migrations')

/**
 * The PostgreSQL advisory lock migrations run under ("dps_mig" in ASCII). Every instance of a
 * cluster migrates at start: drizzle's migrator takes no lock of its own, so two starting together
 * would both apply the same migration and one would fail. Under the lock one migrates while the
 * others wait, then find nothing left to apply.
 */
export const MIGRATION_LOCK_KEY = '28271138495621479'

const pgliteDir = (dataDir: string) => join(dataDir, 'pglite')

/**
 * Creates the embedded database's files (initdb) when the data folder has none, in a child
 * process: initdb grows PGlite's memory to about 750 MiB, which a process never gives back, so
 * the service opens the finished folder at its running size instead (about 150 MiB).
 */
export async function initPgliteDir(dataDir: string): Promise<void> {
  const dir = pgliteDir(dataDir)
  if (existsSync(join(dir, 'PG_VERSION'))) return
  mkdirSync(dir, { recursive: true })
  const module = import.meta.resolve('@electric-sql/pglite')
  const script = `import { PGlite } from ${JSON.stringify(module)}
const db = new PGlite(${JSON.stringify(dir)})
await db.query('select 1')
await db.close()`
  await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 120_000 }).catch((err) => {
    throw new Error(`could not create the embedded database in ${dir}: ${(err as { stderr?: string }).stderr || (err as Error).message}`)
  })
}

export function openDatabase(opts: { databaseUrl?: string; dataDir: string; pgliteSharedBuffers?: string }): DatabaseHandle {
  if (opts.databaseUrl) {
    const sql = postgres(opts.databaseUrl, { max: 10, onnotice: () => {} })
    const db = drizzlePostgres(sql, { schema })
    return {
      db: db as unknown as Database,
      kind: 'postgres',
      async migrate() {
        // A session lock on a connection of its own, held while the migrator uses the pool.
        const lock = await sql.reserve()
        try {
          await lock`select pg_advisory_lock(${MIGRATION_LOCK_KEY}::bigint)`
          try {
            await migratePostgres(db, { migrationsFolder })
          } finally {
            await lock`select pg_advisory_unlock(${MIGRATION_LOCK_KEY}::bigint)`
          }
        } finally {
          lock.release()
        }
      },
      close: () => sql.end({ timeout: 5 }),
    }
  }
  const dir = pgliteDir(opts.dataDir)
  mkdirSync(dir, { recursive: true })
  const client = new PGlite(
    dir,
    opts.pgliteSharedBuffers ? { startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${opts.pgliteSharedBuffers}`] } : {},
  )
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

/**
 * A repository function with its database bound, for a service that takes its repository as a
 * parameter: the port follows the real function's signature, so a test's stand-in cannot drift.
 */
export type Bound<F> = F extends (db: Executor, ...args: infer A) => infer R ? (...args: A) => R : never
