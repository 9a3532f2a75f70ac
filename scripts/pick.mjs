#!/usr/bin/env node
// Prints one field of the JSON on standard input: `curl … | node scripts/pick.mjs device.id`.
// The README's shell examples use it to keep what an answer carries (a token, an id) in a
// variable. When the field is missing it says why on stderr and exits 1, so a failed call (an
// error body {message, code}, or no JSON at all) stops there instead of carrying "undefined" on.
import { readFileSync } from 'node:fs'

const path = process.argv[2]
if (!path) {
  process.stderr.write('usage: … | node scripts/pick.mjs FIELD[.FIELD…]\n')
  process.exit(2)
}
const text = readFileSync(0, 'utf8')
let body
try {
  body = JSON.parse(text)
} catch {
  process.stderr.write(`pick: the answer is not JSON: ${text.slice(0, 200) || '(empty: is the service running?)'}\n`)
  process.exit(1)
}
let value = body
for (const key of path.split('.')) value = value !== null && typeof value === 'object' ? value[key] : undefined
if (value === undefined || value === null) {
  const why =
    body && typeof body === 'object' && typeof body.message === 'string' ? `${body.code ?? 'error'}: ${body.message}` : text.slice(0, 200)
  process.stderr.write(`pick: no ${path} in the answer (${why})\n`)
  process.exit(1)
}
process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`)
