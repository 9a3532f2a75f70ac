// Instances of a cluster start together and each migrates the shared PostgreSQL database: the
// migrations run under an advisory lock, so one applies them while the others wait and then find
// nothing left. Uses the machine's PostgreSQL whatever the suite's backing (PGlite has one process).
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import { MIGRATION_LOCK_KEY, migrationsFolder, openDatabase } from '../../src/db/client.js'
import { freshPostgres } from '../helpers/app.js'
import { eventually } from '../helpers/mqtt.js'
import { postgresUrl } from '../helpers/services.js'

const server = await postgresUrl()

t.test(
  'two instances migrating one new database together: one migrates, the other waits, both start',
  { skip: !server && 'no PostgreSQL reachable' },
  async (t) => {
    const url = await freshPostgres(t, server as string)
    const journal = JSON.parse(await readFile(join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }
    const watch = postgres(url, { max: 2, onnotice: () => {} })
    t.teardown(() => watch.end())
    // The test holds the lock first, so both instances are seen waiting for it, whatever their timing.
    const holder = await watch.reserve()
    await holder`select pg_advisory_lock(${MIGRATION_LOCK_KEY}::bigint)`

    const a = openDatabase({ databaseUrl: url, dataDir: '/nonexistent' })
    const b = openDatabase({ databaseUrl: url, dataDir: '/nonexistent' })
    t.teardown(() => Promise.all([a.close(), b.close()]))
    const both = Promise.allSettled([a.migrate(), b.migrate()])

    const waiting = async () => {
      const [row] = await watch<{ n: number }[]>`
      select count(*)::int as n from pg_locks
      where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`
      return row!.n === 2
    }
    await eventually(waiting)
    t.pass('both instances wait for the migration lock')
    const [table] = await watch<{ name: string | null }[]>`select to_regclass('drizzle.__drizzle_migrations')::text as name`
    t.equal(table?.name, null, 'and neither has applied anything meanwhile')

    await holder`select pg_advisory_unlock(${MIGRATION_LOCK_KEY}::bigint)`
    holder.release()
    const results = await both
    t.same(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled'],
      `both migrations succeed${results.map((r) => (r.status === 'rejected' ? `: ${(r.reason as Error).message}` : '')).join('')}`,
    )
    const [applied] = await watch<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`
    t.equal(applied?.n, journal.entries.length, 'each migration applied once')
    const [held] = await watch<{ n: number }[]>`select count(*)::int as n from pg_locks where locktype = 'advisory'`
    t.equal(held?.n, 0, 'and the lock is released')
  },
)
