// The conversion queue: never more than `concurrency` tasks in flight, waiting tasks start in the
// order they came as slots free up, a failing task frees its slot, and conversions through the
// queue give the same files as direct calls.
import t from 'tap'
import { convertForDisplay, createConversionQueue } from '../../src/images/convert.js'
import { drawnPng } from './pixels.js'

type Deferred = { promise: Promise<string>; resolve: (v: string) => void; reject: (e: Error) => void }
function deferred(): Deferred {
  let resolve!: (v: string) => void
  let reject!: (e: Error) => void
  const promise = new Promise<string>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}
const settle = () => new Promise((r) => setImmediate(r))

t.test('at most `concurrency` tasks run; the rest start in order', async (t) => {
  const q = createConversionQueue(2)
  const gates = Array.from({ length: 5 }, deferred)
  const started: number[] = []
  let running = 0
  let maxRunning = 0
  const results = gates.map((g, i) =>
    q.run(async () => {
      started.push(i)
      running++
      maxRunning = Math.max(maxRunning, running)
      try {
        return await g.promise
      } finally {
        running--
      }
    }),
  )
  // Observe outcomes from the start, so the planned rejection is never unhandled.
  const outcomes = Promise.allSettled(results)
  await settle()
  t.same(started, [0, 1], 'two start at once')
  t.equal(q.active, 2)
  t.equal(q.waiting, 3)

  gates[1]!.resolve('one')
  await settle()
  t.same(started, [0, 1, 2], 'a freed slot goes to the next in line')
  t.equal(q.active, 2)

  gates[0]!.reject(new Error('boom'))
  await settle()
  t.same(started, [0, 1, 2, 3], 'a failed task frees its slot too')

  gates[2]!.resolve('two')
  gates[3]!.resolve('three')
  gates[4]!.resolve('four')
  t.same(
    (await outcomes).map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
    ['boom', 'one', 'two', 'three', 'four'],
    'each caller gets its own result or error',
  )
  t.equal(maxRunning, 2, 'never more than two in flight')
  t.equal(q.active, 0)
  t.equal(q.waiting, 0)
})

t.test('conversions through the queue match direct ones', async (t) => {
  const q = createConversionQueue(2)
  t.equal(q.concurrency, 2)
  const a = await drawnPng(320, 200, (x, y) => [x % 256, y, 128])
  const b = await drawnPng(200, 320, (x, y) => [255 - (x % 256), 64, y % 256])
  const profile = { width: 160, height: 96, palette: 'spectra6' }
  const [qa, qb] = await Promise.all([q.convert(a, profile), q.convert(b, profile)])
  const [da, db] = await Promise.all([convertForDisplay(a, profile), convertForDisplay(b, profile)])
  t.ok(qa[0]!.data.equals(da[0]!.data), 'first image')
  t.ok(qb[0]!.data.equals(db[0]!.data), 'second image')
  t.notOk(qa[0]!.data.equals(qb[0]!.data), 'the two images differ')
})

t.test('concurrency must be a positive integer', async (t) => {
  t.throws(() => createConversionQueue(0), RangeError)
  t.throws(() => createConversionQueue(1.5), RangeError)
})
