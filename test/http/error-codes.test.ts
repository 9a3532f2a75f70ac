import t from 'tap'
import { ERRORS } from '../../src/error-codes.js'
import Fastify from 'fastify'
import { AppError, appError, installErrorHandling } from '../../src/errors.js'

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

t.test('database refusals are 4xx: a value it cannot store is 400, a row deleted meanwhile is 409', async (t) => {
  const app = Fastify({ logger: false })
  installErrorHandling(app)
  const dbError = (code: string, wrapped: boolean) => {
    const e = Object.assign(new Error('db'), { code })
    return wrapped ? Object.assign(new Error('query failed'), { cause: e }) : e
  }
  app.get('/fk', async () => {
    throw dbError('23503', false)
  })
  app.get('/fk-wrapped', async () => {
    throw dbError('23503', true)
  })
  app.get('/value', async () => {
    throw dbError('22P02', true)
  })
  app.get('/other', async () => {
    throw dbError('40001', false)
  })
  t.teardown(() => app.close())
  for (const path of ['/fk', '/fk-wrapped']) {
    const res = await app.inject({ url: path })
    t.equal(res.statusCode, 409, path)
    t.equal(res.json().code, 'REFERENCE_GONE')
  }
  t.equal((await app.inject({ url: '/value' })).json().code, 'INVALID_VALUE')
  t.equal((await app.inject({ url: '/other' })).statusCode, 500, 'anything else is still an internal error')
})

t.test('a full disk is 507 STORAGE_FULL: PostgreSQL disk_full (53100, also PGlite), ENOSPC and EDQUOT, however wrapped', async (t) => {
  const app = Fastify({ logger: false })
  installErrorHandling(app)
  const failures: Record<string, () => Error> = {
    '/disk-full': () =>
      Object.assign(new Error('query failed'), { cause: Object.assign(new Error('could not extend file'), { code: '53100' }) }),
    '/enospc': () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
    '/edquot': () => Object.assign(new Error('upload failed'), { cause: Object.assign(new Error('quota'), { code: 'EDQUOT' }) }),
  }
  for (const [path, make] of Object.entries(failures))
    app.get(path, async () => {
      throw make()
    })
  t.teardown(() => app.close())
  for (const path of Object.keys(failures)) {
    const res = await app.inject({ url: path })
    t.same([res.statusCode, res.json().code], [507, 'STORAGE_FULL'], path)
  }
})
