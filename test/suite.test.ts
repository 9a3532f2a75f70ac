// The suite runs test/groups/*.test.ts only, so a test file in no group would never run: every
// test file is in exactly one group of test/groups.ts, and every group has its entry file.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { entryFile, groups, type GroupName } from './groups.js'

const root = fileURLToPath(new URL('.', import.meta.url))

t.test('every test file is in exactly one group, and every group has an entry file', async (t) => {
  const all = (await readdir(root, { recursive: true })).filter((f) => f.endsWith('.test.ts') && !f.startsWith('groups/')).sort()
  const listed = Object.values(groups).flatMap((g) => [...g.files])
  const seen = new Map<string, number>()
  for (const f of listed) seen.set(f, (seen.get(f) ?? 0) + 1)
  t.same(
    all.filter((f) => !seen.has(f)),
    [],
    'no test file is left out of the groups',
  )
  t.same(
    [...seen].filter(([, n]) => n > 1).map(([f]) => f),
    [],
    'none is in two groups',
  )
  t.same(
    listed.filter((f) => !all.includes(f)),
    [],
    'every listed file exists',
  )
  const entries = (await readdir(new URL('groups/', import.meta.url))).filter((f) => f.endsWith('.test.ts')).sort()
  t.same(
    entries,
    Object.keys(groups)
      .map((g) => entryFile(g as GroupName))
      .sort(),
    'one entry file per group, numbered in the order of the list',
  )
})
