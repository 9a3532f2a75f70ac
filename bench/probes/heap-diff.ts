// Sums two V8 heap snapshots (v8.writeHeapSnapshot, Chrome DevTools' format) by node type and
// constructor name and prints what grew, per unit (a session, when DIVISOR is the number of
// sessions connected between them) and the biggest owners of the first one:
//
//   npx tsx bench/probes/heap-diff.ts BEFORE.heapsnapshot AFTER.heapsnapshot [DIVISOR=1] [ROWS=40]
import { readFileSync } from 'node:fs'

type Snapshot = {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }
  nodes: number[]
  strings: string[]
}

/** Self size and count per "type:name" (names of code and strings cut to 60 characters). */
function summarise(file: string): Map<string, { size: number; count: number }> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot
  const fields = s.snapshot.meta.node_fields
  const types = s.snapshot.meta.node_types[0]
  const width = fields.length
  const [iType, iName, iSize] = [fields.indexOf('type'), fields.indexOf('name'), fields.indexOf('self_size')]
  const out = new Map<string, { size: number; count: number }>()
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + iType]!]!
    let name = s.strings[s.nodes[i + iName]!]!
    // Strings and numbers are named by their content: group them by type alone.
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number') name = ''
    const key = `${type}:${name.slice(0, 60)}`
    const e = out.get(key) ?? { size: 0, count: 0 }
    e.size += s.nodes[i + iSize]!
    e.count += 1
    out.set(key, e)
  }
  return out
}

const [before, after, divisorArg, rowsArg] = process.argv.slice(2)
if (!before) throw new Error('usage: heap-diff.ts BEFORE [AFTER] [DIVISOR] [ROWS]')
const divisor = Number(divisorArg ?? 1)
const rows = Number(rowsArg ?? 40)
const a = summarise(before)
const total = (m: Map<string, { size: number }>) => [...m.values()].reduce((t, e) => t + e.size, 0)
if (!after) {
  console.log(`total ${(total(a) / 2 ** 20).toFixed(1)} MiB`)
  for (const [k, e] of [...a].sort((x, y) => y[1].size - x[1].size).slice(0, rows))
    console.log(`${(e.size / 2 ** 20).toFixed(2).padStart(8)} MiB ${String(e.count).padStart(9)}  ${k}`)
} else {
  const b = summarise(after)
  const diff = [...new Set([...a.keys(), ...b.keys()])].map((k) => {
    const x = a.get(k) ?? { size: 0, count: 0 }
    const y = b.get(k) ?? { size: 0, count: 0 }
    return { k, size: (y.size - x.size) / divisor, count: (y.count - x.count) / divisor }
  })
  console.log(`total growth per unit: ${((total(b) - total(a)) / divisor).toFixed(0)} bytes`)
  for (const d of diff.sort((x, y) => y.size - x.size).slice(0, rows))
    console.log(`${d.size.toFixed(0).padStart(7)} B ${d.count.toFixed(2).padStart(7)}  ${d.k}`)
}
