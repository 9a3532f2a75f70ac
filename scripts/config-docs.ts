// npm run docs:config: rewrites docs/configuration.md's reference tables from the declarations in
// src/config/ (the text above the file's marker line is kept).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { configurationDoc } from '../src/config/docs.js'

const file = join(import.meta.dirname, '..', 'docs', 'configuration.md')
const before = readFileSync(file, 'utf8')
const after = configurationDoc(before)
if (after === before) console.log('docs/configuration.md is up to date')
else {
  writeFileSync(file, after)
  console.log('docs/configuration.md rewritten')
}
