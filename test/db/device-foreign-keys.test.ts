// Migration 0010 adds foreign keys from prompt, generation_job and image to device. Databases
// already hold rows whose device is gone, so the migration must clear those first; and the keys
// must then do what device deletion did by hand: prompts go, jobs and images lose their device.
import t from 'tap'
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { migrationsFolder, rowsOf } from '../../src/db/client.js'
import { freshPostgres } from '../helpers/app.js'

const FK_MIGRATION = '0010_device_foreign_keys'

/** The migrations folder as it was before `tag`: the same files, the journal cut before it. */
async function folderBefore(tag: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dps-migrations-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await cp(migrationsFolder, dir, { recursive: true })
  const journal = JSON.parse(await readFile(join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ tag: string }> }
  const at = journal.entries.findIndex((e) => e.tag === tag)
  t.ok(at > 0, `${tag} is in the journal`)
  journal.entries = journal.entries.slice(0, at)
  await writeFile(join(dir, 'meta', '_journal.json'), JSON.stringify(journal))
  return dir
}

type Db = { execute(q: ReturnType<typeof sql>): Promise<unknown> }
type Handle = { db: Db; migrate(folder: string): Promise<void>; close(): Promise<void> }

async function openFresh(): Promise<Handle> {
  if (process.env.DATABASE_URL) {
    const url = await freshPostgres(t, process.env.DATABASE_URL)
    const client = postgres(url, { max: 1, onnotice: () => {} })
    const db = drizzlePostgres(client)
    return { db, migrate: (folder) => migratePostgres(db, { migrationsFolder: folder }), close: () => client.end() }
  }
  const client = new PGlite()
  const db = drizzlePglite(client)
  return { db, migrate: (folder) => migratePglite(db, { migrationsFolder: folder }), close: () => client.close() }
}

t.test('the migration clears orphans, then the keys cascade and set null', async (t) => {
  const h = await openFresh()
  t.teardown(() => h.close())
  await h.migrate(await folderBefore(FK_MIGRATION))

  const { db } = h
  const rows = async <T>(q: ReturnType<typeof sql>) => rowsOf<T>(await db.execute(q))
  await db.execute(sql`insert into "user" (id, name, email) values ('u1', 'U', 'u1@example.com')`)
  await db.execute(
    sql`insert into device (id, name, user_id, pin_code, display) values ('live', 'Live', 'u1', '111111', '{"width":800,"height":480,"palette":"bw"}')`,
  )
  for (const dev of ['live', 'gone']) {
    await db.execute(
      sql`insert into prompt (id, user_id, device_id, text, model, width, height) values (${`p-${dev}`}, 'u1', ${dev}, 'a cat', 'local', 800, 480)`,
    )
    await db.execute(
      sql`insert into generation_job (id, user_id, device_id, provider, model, input, deadline_at) values (${`j-${dev}`}, 'u1', ${dev}, 'local', 'local', '{}', now())`,
    )
    await db.execute(
      sql`insert into image (id, user_id, device_id, source, original_key, content_type, width, height, bytes, sha256) values (${`i-${dev}`}, 'u1', ${dev}, 'upload', 'k', 'image/png', 1, 1, 1, 'x')`,
    )
  }

  await h.migrate(migrationsFolder)

  t.same(
    await rows<{ id: string }>(sql`select id from prompt order by id`),
    [{ id: 'p-live' }],
    "the orphan prompt is deleted, the live device's kept",
  )
  t.same(await rows(sql`select id, device_id from generation_job order by id`), [
    { id: 'j-gone', device_id: null },
    { id: 'j-live', device_id: 'live' },
  ])
  t.same(await rows(sql`select id, device_id from image order by id`), [
    { id: 'i-gone', device_id: null },
    { id: 'i-live', device_id: 'live' },
  ])

  await db.execute(sql`delete from device where id = 'live'`)
  t.same(await rows(sql`select id from prompt`), [], 'deleting the device deletes its prompts')
  t.same(
    await rows(sql`select device_id from generation_job where id = 'j-live'`),
    [{ device_id: null }],
    'its jobs stay, without a device',
  )
  t.same(await rows(sql`select device_id from image where id = 'i-live'`), [{ device_id: null }], 'its images stay, without a device')
  await t.rejects(
    db.execute(
      sql`insert into prompt (id, user_id, device_id, text, model, width, height) values ('p-new', 'u1', 'gone', 'x', 'local', 1, 1)`,
    ),
    'a prompt for a missing device is refused',
  )
})
