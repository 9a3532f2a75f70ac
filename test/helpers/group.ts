// Runs several test files in one process. Each file costs about 4 s of CPU before its first test
// (tap, tsx, importing the app); 83 files paid that 83 times a pass. A group imports its files in
// order: their tests queue on the one root test and run one after another, each file still
// starting its own app, so a file behaves as when run alone (`npx tap test/auth/account.test.ts`
// still works). The groups and which of them run again against PostgreSQL and Redis are in
// test/groups.ts.
import t from 'tap'
import { groups, type GroupName } from '../groups.js'

/** A limit for a hung group, not a speed check: generous, since a loaded 2-core machine runs a file several times slower. */
const PER_FILE_MS = 300_000
const MIN_MS = 600_000

export async function runGroup(name: GroupName) {
  const { files } = groups[name]
  const timeout = Math.max(MIN_MS, PER_FILE_MS * files.length)
  t.setTimeout(timeout)
  // The runner reads its child's limit from this comment (@tapjs/core spawn.js).
  t.comment(`timeout=${timeout}`)
  for (const file of files) {
    // Queued in order with the tests: names the file whose results follow (.ci/run's summary uses it).
    t.comment(`file: test/${file}`)
    // Imported inside a test, so that it starts after the previous file's tests are done and the
    // root test stays open while a file's top level awaits (starting its app): imported bare, the
    // root had nothing queued meanwhile, ended, ran every teardown registered so far (removing the
    // data folder of the app being started) and never ran the file's tests.
    await t.test(`loads test/${file}`, async () => {
      await import(new URL(`../${file}`, import.meta.url).href)
    })
  }
}
