// Rewrites test/times.tsv, the per-file times that order the test queue on a machine that never
// ran the suite (test/helpers/queue.ts), from this machine's last runs ($TMPDIR/dps-test-times.tsv).
// Run it after a full `npm test` on each backing on a quiet machine; commit the result.
import { readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { queuedFiles, readTimes, SEED_TIMES } from '../test/helpers/queue.js'

const source = process.argv[2] ?? join(tmpdir(), 'dps-test-times.tsv')
readFileSync(source) // fails loudly when this machine has no times yet
const queued = new Set(queuedFiles())
const lines: string[] = []
for (const kind of ['embedded', 'backing']) {
  const times = new Map([...readTimes(SEED_TIMES, kind), ...readTimes(source, kind)])
  for (const [file, ms] of [...times].filter(([f]) => queued.has(f)).sort((a, b) => b[1] - a[1])) {
    lines.push(`${kind}\t${file}\t${ms}`)
  }
}
writeFileSync(SEED_TIMES, `${lines.join('\n')}\n`)
console.log(`${SEED_TIMES}: ${lines.length} times from ${source}`)
