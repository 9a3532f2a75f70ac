// docs/configuration.md is the configuration reference: every variable the service reads
// (the keys of src/config.ts's schema) has a row there, and every variable a row names is one the
// service reads. A variable added, renamed or removed without its documentation fails here.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { configVariables } from '../../src/config.js'

const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'configuration.md'), 'utf8')

/** The variables a table row's first cell names: `A`, `B` and the `X_ID`/`_SECRET` shorthand for X_ID and X_SECRET. */
function documented(markdown: string): Set<string> {
  const names = new Set<string>()
  for (const line of markdown.split('\n')) {
    const cell = /^\|([^|]+)\|/.exec(line)?.[1]
    if (!cell || /^\s*-+\s*$/.test(cell) || /variable/.test(cell)) continue
    for (const m of cell.matchAll(/`([A-Z][A-Z0-9_]+)`(?:\/`(_[A-Z0-9_]+)`)?/g)) {
      names.add(m[1]!)
      if (m[2]) names.add(m[1]!.replace(/_[A-Z0-9]+$/, '') + m[2])
    }
  }
  return names
}

t.test('every variable the service reads is documented, and only those', async (t) => {
  const inDoc = documented(doc)
  t.ok(configVariables.length > 50, `${configVariables.length} variables read`)
  t.same(
    configVariables.filter((v) => !inDoc.has(v)),
    [],
    'read by src/config.ts but missing from docs/configuration.md',
  )
  t.same(
    [...inDoc].filter((v) => !configVariables.includes(v)),
    [],
    'named in docs/configuration.md but not read by the service',
  )
})

t.test('the shorthand is read as the documentation means it', async (t) => {
  t.same([...documented('| `GOOGLE_CLIENT_ID`/`_SECRET`, `PORT` | x | y |\n')].sort(), ['GOOGLE_CLIENT_ID', 'GOOGLE_CLIENT_SECRET', 'PORT'])
})
