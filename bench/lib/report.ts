// Results of a scenario: per metric, one value per round for each side (the rounds alternate
// ours, peer, ours, peer …), the median and range of each side and of the per-round ratio
// ours/peer; written to bench/results/<scenario>.json and printed as a markdown table.
import { mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export type Metric = {
  name: string
  /** Which way is better for us: the ratio reads "ours is N× the peer". */
  better: 'higher' | 'lower'
  ours: number[]
  peer: number[]
}

export type ScenarioResult = {
  scenario: string
  ours: string
  peer: string
  rounds: number
  metrics: Metric[]
  notes: string[]
  /** Anything else worth keeping in the JSON (raw rounds, sizes, settings). */
  details?: Record<string, unknown>
}

export type Summary = { median: number; min: number; max: number; n: number }

export function summarize(xs: number[]): Summary | null {
  const v = xs.filter((x) => Number.isFinite(x))
  if (!v.length) return null
  const s = [...v].sort((a, b) => a - b)
  const mid = s.length >> 1
  const median = s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
  return { median, min: s[0]!, max: s[s.length - 1]!, n: s.length }
}

/** The median and range of a metric's per-round ratios (ours/peer). */
export const ratioSummary = (m: Metric) => summarize(ratios(m))

/** Per-round ratios ours[i] / peer[i]; rounds where the peer is 0 give no ratio. */
function ratios(m: Metric): number[] {
  const out: number[] = []
  for (let i = 0; i < Math.min(m.ours.length, m.peer.length); i++) {
    const a = m.ours[i]!
    const b = m.peer[i]!
    if (Number.isFinite(a) && Number.isFinite(b) && b !== 0) out.push(a / b)
  }
  return out
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return '—'
  const a = Math.abs(v)
  if (a === 0) return '0'
  if (a >= 1000) return Math.round(v).toLocaleString('en-US')
  if (a >= 100) return v.toFixed(0)
  if (a >= 10) return v.toFixed(1)
  if (a >= 1) return v.toFixed(2)
  return v.toPrecision(2)
}

function fmtSummary(s: Summary | null): string {
  if (!s) return '—'
  if (s.n === 1 || s.min === s.max) return fmt(s.median)
  return `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`
}

export function tableRows(r: ScenarioResult): string[] {
  return r.metrics.map((m) => {
    const ratio = summarize(ratios(m))
    const verdict = ratio
      ? m.better === 'higher'
        ? ratio.median >= 1
          ? 'ours ahead'
          : 'peer ahead'
        : ratio.median <= 1
          ? 'ours ahead'
          : 'peer ahead'
      : ''
    return `| ${r.scenario} | ${m.name} | ${fmtSummary(summarize(m.ours))} | ${fmtSummary(summarize(m.peer))} | ${ratio ? `${fmtSummary(ratio)}×` : '—'} | ${m.better} is better${verdict ? `; ${verdict}` : ''} |`
  })
}

export const TABLE_HEAD = [
  '| scenario | metric | ours median (range) | peer median (range) | ours/peer median (range) | reading |',
  '|---|---|---|---|---|---|',
]

export function markdown(r: ScenarioResult): string {
  return [
    `### ${r.scenario}: ${r.ours} vs ${r.peer} (${r.rounds} rounds each, alternating)`,
    '',
    ...TABLE_HEAD,
    ...tableRows(r),
    '',
    ...r.notes.map((n) => `- ${n}`),
    '',
  ].join('\n')
}

export function machine() {
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: loadavg().map((x) => Math.round(x * 100) / 100),
  }
}

/** Above this 1-minute load average a machine is busy: a busy machine slows the faster side more, and flatters the slower one. */
export const QUIET_LOAD = 1.5

/** The 1-minute load average, rounded. */
export const loadNow = () => Math.round(loadavg()[0]! * 100) / 100

/** What a result says of the machine's load around it: a line for its notes, and whether it was busy before it started. */
export function loadNote(before: number, after: number): { note: string; busy: boolean } {
  const busy = before > QUIET_LOAD
  return {
    busy,
    note: `Load average (1 min) ${before} before this scenario, ${after} after (its own work included)${busy ? `: **the machine was busy before it started (above ${QUIET_LOAD}); these figures flatter the slower side, rerun on a quiet machine**` : ''}.`,
  }
}

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
/** The committed figures the README and docs/benchmarks.md quote: written only by `--save`. */
export const savedResultsDir = join(benchDir, 'results')
/** Every run's figures (ignored by git): a run leaves the checkout clean. */
export const runResultsDir = join(benchDir, 'out')

/**
 * Writes <dir>/<scenario>.json (`--quick`: <dir>/quick/, so a quick run never replaces a full
 * run's figures), in the run folder and, with `--save`, in the committed one too.
 */
export function writeResult(r: ScenarioResult, extra: Record<string, unknown>, opts: { quick: boolean; save: boolean }): void {
  const metrics = r.metrics.map((m) => ({
    ...m,
    oursSummary: summarize(m.ours),
    peerSummary: summarize(m.peer),
    ratio: summarize(ratios(m)),
  }))
  for (const base of opts.save ? [runResultsDir, savedResultsDir] : [runResultsDir]) {
    const dir = opts.quick ? join(base, 'quick') : base
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `${r.scenario}.json`), `${JSON.stringify({ ...extra, ...r, metrics }, null, 2)}\n`)
  }
}
