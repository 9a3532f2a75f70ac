// npx tsx bench/probes/profile-shares.ts FILE.cpuprofile [FROM_S TO_S] [NAME=REGEX …]
// Shares of a V8 CPU profile's busy samples (idle left out) spent under frames whose
// "function url:line" matches each REGEX (inclusive time), within seconds FROM_S..TO_S of the
// profile. Used on the fleet benchmark's instance profiles (BENCH_CPU_PROF=DIR) to tell what an
// instance spends on messages from the other instances (docs/benchmarks.md "Fleet"). V8 samples
// wall time: on a loaded machine these are shares, not CPU seconds.
import { readFileSync } from 'node:fs'

type Frame = { functionName: string; url: string; lineNumber: number }
type Profile = { nodes: { id: number; callFrame: Frame; children?: number[] }[]; samples: number[]; timeDeltas: number[] }

const DEFAULT_GROUPS: Record<string, string> = {
  'messages from other instances (Redis pub/sub)': 'handleSubscriberReply ',
  'subscription broadcast ($SYS/sub/add)': 'broadcastPersistence',
  'garbage collection': '^\\(garbage collector\\)',
  'ioredis sendCommand': '^sendCommand .*ioredis',
  'aedes CONNECT handler': 'aedes/lib/handlers/connect',
  'aedes SUBSCRIBE handler': 'aedes/lib/handlers/subscribe',
  'PostgreSQL client': 'postgres/src/|drizzle-orm',
}

const [file, ...rest] = process.argv.slice(2)
if (!file) throw new Error('usage: profile-shares.ts FILE.cpuprofile [FROM_S TO_S] [NAME=REGEX …]')
const window = rest.length >= 2 && !rest[0]!.includes('=') ? [Number(rest[0]), Number(rest[1])] : [0, Number.POSITIVE_INFINITY]
const named = rest.filter((a) => a.includes('='))
const groups = named.length
  ? Object.fromEntries(named.map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]))
  : DEFAULT_GROUPS
const patterns = Object.entries(groups).map(([name, re]) => [name, new RegExp(re)] as const)

const p = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(p.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const key = (f: Frame) => `${f.functionName} ${f.url.split('node_modules/').pop()}:${f.lineNumber}`

let t = 0
let busy = 0
const under = new Map<string, number>(patterns.map(([name]) => [name, 0]))
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i] ?? 0
  const d = p.timeDeltas[i + 1] ?? 0
  if (t < window[0]! * 1e6 || t >= window[1]! * 1e6) continue
  let id: number | undefined = p.samples[i]
  if (byId.get(id!)?.callFrame.functionName === '(idle)') continue
  busy += d
  const stack: string[] = []
  for (; id !== undefined; id = parent.get(id)) stack.push(key(byId.get(id)!.callFrame))
  for (const [name, re] of patterns) if (stack.some((k) => re.test(k))) under.set(name, under.get(name)! + d)
}
console.log(`${file}: ${(busy / 1e6).toFixed(1)} s busy in seconds ${window[0]}–${window[1]}`)
for (const [name, v] of under) console.log(`  ${((100 * v) / (busy || 1)).toFixed(1)} %  ${name}`)
