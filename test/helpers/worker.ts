// Runs test files in one process: each file costs about 4.5 s of CPU before its first test (tap,
// tsx, importing the app) and its first app start 3 s more, later ones about 1 s; a process per
// file paid that for every file. A worker takes a file from the run's queue (test/helpers/queue.ts)
// and imports it: its tests queue on the one root test and run one after another, each file still
// starting its own app, so a file behaves as when run alone (`npx tap test/auth/account.test.ts`
// still works). Only when a file's tests are done does the worker take the next one.
import t from 'tap'
import { ownProcess } from '../groups.js'
import { openQueue, skippedHere } from './queue.js'

/** A limit for a hung file, not a speed check: generous, since a loaded 2-core machine runs a file several times slower. */
const PER_FILE_MS = 300_000

/** Restarts the limit: the root test's own, and the runner's, which reads it from this comment (@tapjs/core spawn.js). */
function limit() {
  t.setTimeout(PER_FILE_MS)
  t.comment(`timeout=${PER_FILE_MS}`)
}

/**
 * Teardowns a file registers on the root test (an app started at a file's top level): tap would
 * run them only when the worker's root ends, so every file's apps, PostgreSQL connections and
 * timers stayed open until the last file was done (PostgreSQL ran out of connections, and each
 * later file ran beside all the earlier ones' apps). Kept here and run, newest first as tap does,
 * once the file's tests are done.
 */
const fileTeardowns: (() => unknown)[] = []

function keepFileTeardowns() {
  const keep = (fn: () => unknown) => void fileTeardowns.push(fn)
  Object.assign(t, { teardown: keep, after: keep })
}

async function runFileTeardowns() {
  for (let fn = fileTeardowns.pop(); fn; fn = fileTeardowns.pop()) await fn()
}

async function load(file: string) {
  // Names the file whose results follow (.ci/run's summary uses it). Queued on the root, which the
  // loading test occupies, so it comes out right before the file's own tests.
  t.comment(`file: test/${file}`)
  limit()
  await import(new URL(`../${file}`, import.meta.url).href)
}

export async function runWorker() {
  limit()
  keepFileTeardowns()
  const queue = openQueue()
  let current: { file: string; started: number } | undefined
  for (let more = true; more; ) {
    // The next file is taken inside a test queued after the last file's tests, so only once they
    // are done; imported inside it, so that the root test stays open while a file's top level
    // awaits (starting its app): imported bare, the root had nothing queued meanwhile, ended, ran
    // every teardown registered so far (removing the data folder of the app being started) and
    // never ran the file's tests.
    await t.test('takes the next test file from the queue', async () => {
      await runFileTeardowns()
      if (current) queue.finished(current.file, performance.now() - current.started)
      const file = queue.take()
      current = file ? { file, started: performance.now() } : undefined
      if (file) await load(file)
      else more = false
    })
  }
}

/** Runs a file that must not share its process (test/groups.ts). */
export async function runOwn(name: keyof typeof ownProcess) {
  limit()
  const file = ownProcess[name]
  if (skippedHere(file)) return
  await t.test(`loads test/${file}`, () => load(file))
}
