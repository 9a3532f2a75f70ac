// The embedded database's first start: initdb runs in a child process (this process never grows
// to initdb's size), and the page cache the configuration asks for is the one PostgreSQL runs with.
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { initPgliteDir, openDatabase, rowsOf } from '../../src/db/client.js'

t.test('a new data folder is created in a child process and opened with the configured shared_buffers', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'dps-pglite-init-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const rss = process.memoryUsage().rss
  await initPgliteDir(dataDir)
  t.ok(existsSync(join(dataDir, 'pglite', 'PG_VERSION')), 'initdb wrote the cluster')
  t.ok(process.memoryUsage().rss - rss < 100 * 2 ** 20, 'and this process did not grow by initdb (about 750 MiB in-process)')
  await initPgliteDir(dataDir)
  t.pass('a second call leaves an existing folder alone')

  const handle = openDatabase({ dataDir, pgliteSharedBuffers: '24MB' })
  t.teardown(() => handle.close())
  await handle.migrate()
  const [row] = rowsOf<{ shared_buffers: string }>(await handle.db.execute(sql`SHOW shared_buffers`))
  t.equal(row?.shared_buffers, '24MB')
})
