// The render pool's own bounds, below liquidjs's: a render past the pool's time is stopped by
// ending its worker (the next render gets a fresh one), and renders wait their turn without
// blocking the thread that asked.
import t from 'tap'
import { createRenderPool } from '../../src/screens/render-pool.js'

const job = (template: string) => ({
  template,
  variables: {},
  data: null,
  now: new Date().toISOString(),
  timeZone: 'UTC',
  width: 200,
  height: 100,
})

t.test('a render past the time bound ends its worker; the next render gets a fresh one', async (t) => {
  const pool = createRenderPool({ threads: 1, timeoutMs: 3000, memoryMb: 64 })
  t.teardown(() => pool.close())
  t.match(await pool.render(job('<p>warm</p>')), { ok: true })
  const slow = createRenderPool({ threads: 1, timeoutMs: 150, memoryMb: 64 })
  t.teardown(() => slow.close())
  // About a second of Liquid (within its own 2 s limit), far past this pool's 150 ms.
  const heavy = job('{% for a in (1..3000) %}{% for b in (1..300) %}{{ b }}{% endfor %}{% endfor %}')
  let ticks = 0
  const timer = setInterval(() => ticks++, 10)
  const started = Date.now()
  const r = await slow.render(heavy)
  clearInterval(timer)
  t.match(r, { ok: false, code: 'SCREEN_RENDER_TIMEOUT' })
  t.ok(Date.now() - started < 2500, 'stopped near its bound')
  t.ok(ticks > 3, 'the asking thread kept running meanwhile')
  t.match(await slow.render(job('<p>next</p>')), { ok: true }, 'a fresh worker draws the next one')
  t.equal(slow.running, 0)
})

t.test('renders queue behind a busy worker and all complete', async (t) => {
  const pool = createRenderPool({ threads: 1, timeoutMs: 5000, memoryMb: 64 })
  t.teardown(() => pool.close())
  const results = await Promise.all(Array.from({ length: 5 }, (_, i) => pool.render(job(`<p>${i}</p>`))))
  t.same(
    results.map((r) => r.ok),
    [true, true, true, true, true],
  )
})
