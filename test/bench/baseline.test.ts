// The bench's regression gate (bench/lib/baseline.ts): a ratio worse than its baseline by more
// than its band fails `--check`; within the band, or better, passes; figures without a baseline
// are not judged. And a scenario this machine cannot run is a skip, not a failed bench.
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { compare } from '../../bench/lib/baseline.js'
import type { ScenarioResult } from '../../bench/lib/report.js'

const result = (ours: number[], peer: number[], better: 'higher' | 'lower'): ScenarioResult => ({
  scenario: 'pairing',
  ours: 'ours',
  peer: 'peer',
  rounds: ours.length,
  metrics: [{ name: 'server CPU ms/pairing', better, ours, peer }],
  notes: [],
})
const baseline = (ratio: number, better: 'higher' | 'lower') => ({
  quick: { pairing: { 'server CPU ms/pairing': { ratio, band: 0.5, better } } },
  full: {},
})

t.test('lower is better: beyond ratio × (1 + band) is a regression', async (t) => {
  // Rounds 60/20, 62/20, 64/20: median ratio 3.1, against 1.8 × 1.5 = 2.7.
  const [worse] = compare([result([60, 62, 64], [20, 20, 20], 'lower')], true, baseline(1.8, 'lower'))
  t.ok(worse!.regressed, 'pairing at 3.1× against a 1.8× baseline')
  t.equal(worse!.limit.toFixed(2), '2.70')
  const [within] = compare([result([50, 50, 50], [20, 20, 20], 'lower')], true, baseline(1.8, 'lower'))
  t.notOk(within!.regressed, '2.5× is inside the band')
  const [better] = compare([result([10, 10, 10], [20, 20, 20], 'lower')], true, baseline(1.8, 'lower'))
  t.notOk(better!.regressed, 'an improvement never fails')
})

t.test('higher is better: below ratio / (1 + band) is a regression', async (t) => {
  const [worse] = compare([result([4, 4, 4], [20, 20, 20], 'higher')], true, baseline(0.5, 'higher'))
  t.ok(worse!.regressed, '0.2× against 0.5× (limit 0.5 / 1.5 = 0.33×)')
  const [within] = compare([result([7, 7, 7], [20, 20, 20], 'higher')], true, baseline(0.5, 'higher'))
  t.notOk(within!.regressed)
})

t.test('quick and full runs have their own baselines; unknown figures are not judged', async (t) => {
  t.same(compare([result([60], [20], 'lower')], false, baseline(1.8, 'lower')), [], 'a full run is not judged by quick figures')
  const other = { ...result([60], [20], 'lower'), scenario: 'display' }
  t.same(compare([other], true, baseline(1.8, 'lower')), [])
})

t.test('the committed baseline names the cheap scenarios CI checks', async (t) => {
  const { readBaseline } = await import('../../bench/lib/baseline.js')
  const b = readBaseline()
  for (const name of ['pairing', 'delivery', 'get-session', 'display']) t.ok(b.quick[name], `quick baseline for ${name}`)
})

t.test('an unknown argument is refused with the list of known ones', async (t) => {
  const run = promisify(execFile)
  const err = await run(process.execPath, ['--import=tsx', 'bench/run.ts', '--bogus']).catch((e: { code: number; stderr: string }) => e)
  t.equal((err as { code: number }).code, 1)
  t.match(
    (err as { stderr: string }).stderr,
    /unknown argument --bogus \(use --quick, --only NAME, --list, --check, --save, --save-baseline, --settle SECONDS\)/,
  )
})
