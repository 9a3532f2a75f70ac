// docs/configuration.md is the configuration reference: its tables are generated from the
// declarations in src/config/ (npm run docs:config), so a variable added, renamed, removed or
// re-described without regenerating the file fails here.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { configVariables } from '../../src/config.js'
import { configurationDoc, generatedMarker } from '../../src/config/docs.js'

const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'configuration.md'), 'utf8')

/** The variables the generated tables' rows name, one per row. */
function documented(markdown: string): string[] {
  return [...markdown.matchAll(/^\| `([A-Z][A-Z0-9_]+)` +\|/gm)].map((m) => m[1]!)
}

t.test('docs/configuration.md is what npm run docs:config writes', async (t) => {
  const generated = configurationDoc(doc)
  if (generated !== doc) {
    const a = doc.split('\n')
    const b = generated.split('\n')
    const line = a.findIndex((l, i) => l !== b[i])
    t.fail(
      `docs/configuration.md is stale: run \`npm run docs:config\` and commit the result (first difference at line ${line + 1}: ${JSON.stringify(a[line])} where the declarations give ${JSON.stringify(b[line])})`,
    )
  } else t.pass('docs/configuration.md matches the declarations')
})

t.test('every variable the service reads has exactly one row, in the order declared', async (t) => {
  t.ok(configVariables.length > 100, `${configVariables.length} variables read`)
  t.same(documented(configurationDoc(doc)), configVariables)
})

t.test('the hand-written header is kept, and a file without the marker is refused rather than overwritten', async (t) => {
  const header = '# Configuration\n\nProse a person wrote.\n\n'
  const generated = configurationDoc(`${header}${generatedMarker}\n\nstale tables\n`)
  t.ok(generated.startsWith(header + generatedMarker), 'the text above the marker is kept as it was')
  t.notMatch(generated, /stale tables/, 'what was below it is replaced')
  t.equal(configurationDoc(generated), generated, 'generating again changes nothing')
  t.throws(() => configurationDoc('# Configuration\n\nno marker\n'), /no marker line/)
})
