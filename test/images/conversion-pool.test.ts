// The conversion pool: conversions run in worker threads and give the very bytes of the in-process
// conversion; errors keep their status and code across the thread; never more conversions at
// once than threads; and accounts are served in turn, so one account's queue of many does not
// hold back another's one.
import t from 'tap'
import { convertForDisplay } from '../../src/images/convert.js'
import { createConversionPool } from '../../src/images/conversion-pool.js'
import type { DisplayProfile } from '../../src/images/profiles.js'
import { drawnPng } from './pixels.js'

t.test('a worker gives the same files as the in-process conversion, for every palette and dithering', async (t) => {
  const pool = createConversionPool({ threads: 2 })
  t.teardown(() => pool.close())
  const a = await drawnPng(320, 200, (x, y) => [x % 256, y, 128])
  const b = await drawnPng(200, 320, (x, y) => [255 - (x % 256), 64, y % 256])
  const profiles: DisplayProfile[] = [
    { width: 160, height: 96, palette: 'bw' },
    { width: 160, height: 96, palette: 'bw', dither: 'floyd-steinberg' },
    { width: 160, height: 96, palette: 'gray4', dither: 'atkinson' },
    { width: 160, height: 96, palette: 'spectra6' },
    { width: 96, height: 160, palette: 'acep7', fit: 'contain', dither: 'blue-noise' },
    { width: 160, height: 96, palette: 'color' },
  ]
  for (const profile of profiles) {
    for (const [name, input] of [
      ['first', a],
      ['second', b],
    ] as const) {
      const [pooled, direct] = await Promise.all([pool.convert('someone', input, profile), convertForDisplay(input, profile)])
      t.same(
        pooled.map((v) => [v.format, v.contentType, v.width, v.height]),
        direct.map((v) => [v.format, v.contentType, v.width, v.height]),
        `${profile.palette} ${profile.dither ?? ''} ${name}: the same variants`,
      )
      t.ok(
        pooled.every((v, i) => Buffer.isBuffer(v.data) && v.data.equals(direct[i]!.data)),
        `${profile.palette} ${profile.dither ?? ''} ${name}: byte for byte`,
      )
    }
  }
})

t.test('errors cross the thread with their status and code', async (t) => {
  const pool = createConversionPool({ threads: 1 })
  t.teardown(() => pool.close())
  const png = await drawnPng(32, 32, () => [10, 20, 30])
  await t.rejects(pool.convert('x', Buffer.from('not an image at all'), { width: 64, height: 64, palette: 'bw' }), {
    name: 'ImageInputError',
    statusCode: 422,
    code: 'INVALID_IMAGE',
  })
  await t.rejects(pool.convert('x', png, { width: 0, height: 64, palette: 'bw' }), { statusCode: 400, code: 'INVALID_DISPLAY_PROFILE' })
  await t.rejects(pool.convert('x', png, { width: 4096, height: 4096, palette: 'acep7' }), { statusCode: 400, code: 'DISPLAY_TOO_LARGE' })
  const [ok] = await pool.convert('x', png, { width: 32, height: 32, palette: 'bw' })
  t.equal(ok?.format, 'bmp1', 'the worker still converts after errors')
})

t.test('accounts are served in turn: one account’s many wait behind another’s one only as far as its turn', async (t) => {
  const pool = createConversionPool({ threads: 1 })
  t.teardown(() => pool.close())
  const input = await drawnPng(400, 300, (x, y) => [x % 256, (x + y) % 256, y % 256])
  const profile: DisplayProfile = { width: 480, height: 320, palette: 'acep7' }
  const done: string[] = []
  const track = (label: string, p: Promise<unknown>) => p.then(() => done.push(label))
  // Account A queues six; B then queues one, C two.
  const all = [
    ...Array.from({ length: 6 }, (_, i) => track(`A${i + 1}`, pool.convert('A', input, profile))),
    track('B1', pool.convert('B', input, profile)),
    track('C1', pool.convert('C', input, profile)),
    track('C2', pool.convert('C', input, profile)),
  ]
  t.equal(pool.running, 1, 'one worker thread: one conversion at a time')
  t.equal(pool.waiting, 8, 'the rest wait')
  await Promise.all(all)
  t.same(done, ['A1', 'A2', 'B1', 'C1', 'A3', 'C2', 'A4', 'A5', 'A6'], 'A, B, C in turn once A’s first had started')
  t.equal(pool.running, 0)
  t.equal(pool.waiting, 0)
})

t.test('never more conversions at once than threads', async (t) => {
  const pool = createConversionPool({ threads: 2 })
  t.teardown(() => pool.close())
  const input = await drawnPng(200, 200, (x, y) => [x % 256, y % 256, 0])
  let most = 0
  const all = Array.from({ length: 6 }, (_, i) => pool.convert(`u${i % 3}`, input, { width: 200, height: 200, palette: 'spectra6' }))
  const watch = setInterval(() => (most = Math.max(most, pool.running)), 1)
  await Promise.all(all)
  clearInterval(watch)
  t.equal(most, 2, 'two at most, with two threads')
  t.throws(() => createConversionPool({ threads: 0 }), RangeError)
  t.throws(() => createConversionPool({ threads: 1.5 }), RangeError)
})

t.test('closing refuses what still waits and ends the workers', async (t) => {
  const pool = createConversionPool({ threads: 1 })
  const input = await drawnPng(300, 300, (x, y) => [x % 256, y % 256, 0])
  const profile: DisplayProfile = { width: 600, height: 400, palette: 'acep7' }
  const first = pool.convert('A', input, profile)
  const second = pool.convert('A', input, profile).then(
    () => 'converted',
    (err: Error) => err.message,
  )
  const closing = pool.close()
  t.equal((await first)[0]?.format, 'png-acep7', 'the started one finishes')
  t.match(await second, /shutting down/, 'the waiting one is refused')
  await closing
  await t.rejects(pool.convert('A', input, profile), /closed/, 'nothing is taken after close')
})
