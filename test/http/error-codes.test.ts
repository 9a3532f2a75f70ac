import t from 'tap'
import { ERRORS } from '../../src/error-codes.js'
import { AppError, appError } from '../../src/errors.js'

t.test('every catalogued code is UPPER_SNAKE with an error status and a message', async (t) => {
  for (const [code, spec] of Object.entries(ERRORS)) {
    t.match(code, /^[A-Z][A-Z0-9_]*$/, code)
    t.ok(spec.status >= 400 && spec.status < 600, `${code} status`)
    t.ok(spec.message.length > 0, `${code} message`)
  }
})

t.test('appError takes status and default message from the catalogue; a message override keeps the code', async (t) => {
  const e = appError('DEVICE_NOT_FOUND')
  t.ok(e instanceof AppError)
  t.same([e.statusCode, e.code, e.message], [404, 'DEVICE_NOT_FOUND', 'Device not found'])
  const slow = appError('SLOW_DOWN', 'Poll at most every 5 seconds', { 'retry-after': '5' })
  t.same(
    [slow.statusCode, slow.code, slow.message, slow.headers],
    [429, 'SLOW_DOWN', 'Poll at most every 5 seconds', { 'retry-after': '5' }],
  )
})
