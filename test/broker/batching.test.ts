// The broker's batching: keys that arrive while every batch slot is busy go out together, an
// idle loader answers at once, a failed batch fails only its own keys, and nothing is cached.
import t from 'tap'
import { batched } from '../../broker/batching.js'

const tick = () => new Promise((r) => setImmediate(r))

function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => (open = r))
  return { open, opened }
}

t.test('keys arriving while the slots are busy share the next batch', async (t) => {
  const batches: string[][] = []
  const first = gate()
  const loader = batched<string, string>(
    async (keys) => {
      batches.push([...keys])
      if (batches.length === 1) await first.opened
      return keys.map((k) => k.toUpperCase())
    },
    { concurrency: 1, maxBatchSize: 100 },
  )
  const a = loader.load('a')
  await tick()
  await tick()
  t.same(batches, [['a']], 'an idle loader sends the first key after one turn of the loop')
  const rest = ['b', 'c', 'd'].map((k) => loader.load(k))
  await tick()
  await tick()
  t.same(batches, [['a']], 'nothing else goes out while the only slot is busy')
  first.open()
  t.same(await Promise.all([a, ...rest]), ['A', 'B', 'C', 'D'])
  t.same(batches, [['a'], ['b', 'c', 'd']], 'the waiting keys went out as one batch')
})

t.test('at most `concurrency` batches run, and maxBatchSize splits', async (t) => {
  let running = 0
  let peak = 0
  const sizes: number[] = []
  const loader = batched<number, number>(
    async (keys) => {
      running++
      peak = Math.max(peak, running)
      sizes.push(keys.length)
      await new Promise((r) => setTimeout(r, 5))
      running--
      return keys.map((k) => k * 2)
    },
    { concurrency: 2, maxBatchSize: 10 },
  )
  const results: Promise<number>[] = []
  for (let i = 0; i < 100; i++) {
    results.push(loader.load(i))
    if (i % 7 === 0) await tick()
  }
  const out = await Promise.all(results)
  t.same(
    out,
    Array.from({ length: 100 }, (_, i) => i * 2),
    'every key got its own answer',
  )
  t.ok(peak <= 2, `at most two batches at once (saw ${peak})`)
  t.ok(Math.max(...sizes) <= 10, 'no batch above maxBatchSize')
  t.ok(sizes.length < 100, `fewer batches than keys (${sizes.length})`)
})

t.test('a failing batch rejects its own keys only; per-key errors stay per key; no caching', async (t) => {
  let calls = 0
  const loader = batched<string, string>(
    async (keys) => {
      calls++
      if (keys.includes('boom')) throw new Error('database down')
      return keys.map((k) => (k === 'bad' ? new Error(`no ${k}`) : k))
    },
    { concurrency: 1, maxBatchSize: 100 },
  )
  await t.rejects(loader.load('boom'), /database down/)
  const [good, bad] = await Promise.allSettled([loader.load('x'), loader.load('bad')])
  t.same(good, { status: 'fulfilled', value: 'x' })
  t.match(bad, { status: 'rejected', reason: { message: 'no bad' } })
  await loader.load('x')
  t.equal(calls, 3, 'the same key asked again is asked again (the device row may have changed)')
})
