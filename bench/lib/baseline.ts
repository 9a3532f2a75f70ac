// The regression gate: `npm run bench -- --check` compares each measured ours/peer ratio with
// bench/baseline.json, a ratio and an allowed band per figure, and fails the run when a figure is
// worse than its band allows. Ratios only, never absolute times: both sides run on the same
// machine in the same run, so a slower or busier machine moves both. `--save-baseline` writes
// the ratios just measured (keeping each figure's band) when a change of cost is deliberate.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ratioSummary, type ScenarioResult } from './report.js'

const baselineFile = join(dirname(fileURLToPath(import.meta.url)), '..', 'baseline.json')

type Figure = { ratio: number; band: number; better: 'higher' | 'lower' }
/** Per scenario, per metric name; `quick` and `full` runs measure at different sizes, so each has its own. */
type Baseline = { note?: string; quick: Record<string, Record<string, Figure>>; full: Record<string, Record<string, Figure>> }

/**
 * How much worse a ratio may get before it counts as a regression, as a factor: with 1, a
 * lower-is-better ratio may double and a higher-is-better one halve. Quick runs on two shared
 * cores move a ratio by up to about 1.6× between runs of the same commit; the gate is for the 2–3×
 * regressions that went unnoticed (pairing's CPU, 21.7 → 61.5 ms), not for drift.
 */
const DEFAULT_BAND = 1

export function readBaseline(): Baseline {
  if (!existsSync(baselineFile)) return { quick: {}, full: {} }
  return JSON.parse(readFileSync(baselineFile, 'utf8')) as Baseline
}

export type Verdict = { scenario: string; metric: string; baseline: number; limit: number; now: number; regressed: boolean }

/** Each measured figure that has a baseline, against its limit (the baseline widened by its band). */
export function compare(results: ScenarioResult[], quick: boolean, baseline = readBaseline()): Verdict[] {
  const table = quick ? baseline.quick : baseline.full
  const out: Verdict[] = []
  for (const r of results) {
    for (const m of r.metrics) {
      const figure = table[r.scenario]?.[m.name]
      const now = ratioSummary(m)?.median
      if (!figure || now === undefined) continue
      const limit = figure.better === 'lower' ? figure.ratio * (1 + figure.band) : figure.ratio / (1 + figure.band)
      const regressed = figure.better === 'lower' ? now > limit : now < limit
      out.push({ scenario: r.scenario, metric: m.name, baseline: figure.ratio, limit, now, regressed })
    }
  }
  return out
}

export function verdictTable(verdicts: Verdict[]): string {
  const f = (v: number) => v.toPrecision(3)
  return [
    '| scenario | metric | baseline ratio | limit | now | verdict |',
    '|---|---|---|---|---|---|',
    ...verdicts.map(
      (v) =>
        `| ${v.scenario} | ${v.metric} | ${f(v.baseline)}× | ${f(v.limit)}× | ${f(v.now)}× | ${v.regressed ? '**regressed**' : 'within band'} |`,
    ),
  ].join('\n')
}

/** Records the ratios just measured as the baseline of this kind of run, keeping bands already set. */
export function saveBaseline(results: ScenarioResult[], quick: boolean): void {
  const baseline = readBaseline()
  const table = quick ? baseline.quick : baseline.full
  for (const r of results) {
    for (const m of r.metrics) {
      const now = ratioSummary(m)?.median
      if (now === undefined) continue
      const byMetric = (table[r.scenario] ??= {})
      byMetric[m.name] = { ratio: Number(now.toPrecision(4)), band: byMetric[m.name]?.band ?? DEFAULT_BAND, better: m.better }
    }
  }
  writeFileSync(baselineFile, `${JSON.stringify(baseline, null, 2)}\n`)
}
