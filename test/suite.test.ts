// The suite runs test/groups/*.test.ts only: workers that take every test file from a shared queue,
// and an entry file for each file that needs a process of its own. What test/groups.ts lists must
// exist, or a renamed file would silently lose its exception.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { embeddedOnly, ownProcess, WORKERS } from './groups.js'
import { order, queuedFiles, readTimes, SEED_TIMES, testFiles } from './helpers/queue.js'

t.test('every test file runs: in the workers’ queue or in a process of its own', async (t) => {
  const all = testFiles()
  const queued = queuedFiles()
  t.ok(all.length > 100, 'the suite’s files are found')
  t.ok(all.includes('suite.test.ts') && all.includes('auth/account.test.ts'), 'at the top of test/ and in its folders')
  t.notOk(
    all.some((f) => f.startsWith('groups/')),
    'not the entry files',
  )
  const own = Object.values(ownProcess) as string[]
  t.same(
    all.filter((f) => !queued.includes(f)),
    own,
    'the queue holds all of them but the own-process files',
  )
})

t.test('every file test/groups.ts names exists', async (t) => {
  const all = testFiles()
  t.same(
    embeddedOnly.filter((f) => !all.includes(f)),
    [],
    'the embedded-only files exist',
  )
  t.same(
    Object.values(ownProcess).filter((f) => !all.includes(f)),
    [],
    'the own-process files exist',
  )
  t.equal(new Set(embeddedOnly).size, embeddedOnly.length, 'none listed twice')
})

t.test('one entry file per worker and per own-process file', async (t) => {
  const entries = (await readdir(new URL('groups/', import.meta.url))).filter((f) => f.endsWith('.test.ts')).sort()
  const workers = Array.from({ length: WORKERS }, (_, i) => `worker-${i + 1}.test.ts`)
  const own = Object.keys(ownProcess).map((name) => `0-${name}.test.ts`)
  t.same(entries, [...own, ...workers].sort())
})

t.test('a machine that never ran the suite queues the longest files first, by the committed times', async (t) => {
  const embedded = readTimes(SEED_TIMES, 'embedded')
  const backing = readTimes(SEED_TIMES, 'backing')
  const queued = queuedFiles()
  t.ok(embedded.size > queued.length / 2, 'test/times.tsv has most files’ embedded times')
  t.ok(backing.size > queued.length / 3, 'and their times on PostgreSQL + Redis')
  t.same(
    [...embedded.keys(), ...backing.keys()].filter((f) => !queued.includes(f)),
    [],
    'it names only queued files (npm run test:times drops the rest)',
  )
  const ordered = order(queued, embedded)
  const firstKnown = ordered.findIndex((f) => embedded.has(f))
  t.ok(
    ordered.slice(0, firstKnown).every((f) => !embedded.has(f)),
    'files without a time (new ones) first',
  )
  const known = ordered.slice(firstKnown).map((f) => embedded.get(f) ?? -1)
  t.same(
    known,
    [...known].sort((a, b) => b - a),
    'then the longest first',
  )
  t.equal(ordered.length, queued.length, 'every queued file once')
})
