// What a benchmark result says of the machine's load: a busy machine (1-minute load above 1.5
// before a scenario) slows the faster side more and flatters the slower one, so its figures carry a warning.
import t from 'tap'
import { loadNote, QUIET_LOAD } from '../../bench/lib/report.js'

t.test('a scenario started on a busy machine is marked as such; a quiet one is not', async (t) => {
  t.equal(QUIET_LOAD, 1.5)
  const quiet = loadNote(0.42, 1.9)
  t.notOk(quiet.busy, 'its own work raising the load after does not count')
  t.match(quiet.note, /^Load average \(1 min\) 0\.42 before this scenario, 1\.9 after \(its own work included\)\.$/)
  const busy = loadNote(1.51, 2.3)
  t.ok(busy.busy)
  t.match(busy.note, /busy before it started \(above 1\.5\).*rerun on a quiet machine/)
  t.notOk(loadNote(1.5, 3).busy, '1.5 itself is still quiet')
})
