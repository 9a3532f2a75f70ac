// Shutdown with a handler still running after its client left: the handler must finish before
// what it uses (the database, here a stand-in hook) is closed.
import t from 'tap'
import Fastify from 'fastify'
import { connect } from 'node:net'
import { trackHandlers } from '../../src/http/drain.js'
import { closeUnusedConnectionsOnClose } from '../../src/http/connections.js'

async function scenario(track: boolean) {
  const order: string[] = []
  const app = Fastify()
  // Registered first, so it runs last, like the database's hook in buildApp.
  app.addHook('onClose', async () => {
    order.push('database closed')
  })
  const handlers = track ? trackHandlers(app) : undefined
  let started!: () => void
  const handlerStarted = new Promise<void>((resolve) => (started = resolve))
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  app.post('/work', async () => {
    started()
    await gate
    order.push('handler finished')
    return { ok: true }
  })
  if (handlers) app.addHook('onClose', () => handlers.settled())
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }

  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  socket.write('POST /work HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}')
  await handlerStarted
  // The client gives up; the handler is still waiting.
  socket.destroy()
  const closing = app.close().then(() => order.push('app closed'))
  setTimeout(release, 100)
  await closing
  return order
}

t.test('a handler whose client left finishes before the app closes what it uses', async (t) => {
  t.same(await scenario(true), ['handler finished', 'database closed', 'app closed'])
})

t.test('without tracking, Fastify closes right past it (why the tracking exists)', async (t) => {
  const order = await scenario(false)
  t.equal(order[0], 'database closed', 'the database is closed while the handler still runs')
})

t.test('handlers that throw or answer synchronously are not waited for forever', async (t) => {
  const app = Fastify({ logger: false })
  const handlers = trackHandlers(app)
  app.get('/fail', async () => {
    throw new Error('boom')
  })
  app.get('/sync', (_req, reply) => {
    reply.send({ ok: true })
  })
  await app.ready()
  t.equal((await app.inject({ url: '/fail' })).statusCode, 500)
  t.equal((await app.inject({ url: '/sync' })).statusCode, 200)
  await handlers.settled()
  await app.close()
  t.pass('settled after a failed and a synchronous handler')
})

t.test('a handler that never finishes holds the close only up to the limit', async (t) => {
  const app = Fastify({ logger: false })
  const handlers = trackHandlers(app)
  let started!: () => void
  const handlerStarted = new Promise<void>((resolve) => (started = resolve))
  app.get('/stuck', async () => {
    started()
    await new Promise(() => {})
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  socket.write('GET /stuck HTTP/1.1\r\nhost: x\r\n\r\n')
  await handlerStarted
  socket.destroy()
  await app.close()
  t.equal(await handlers.settled(200), 1, 'returns at the limit and reports the one still running')
})

t.test('a connection that never sent a request does not hold the close', { timeout: 30_000 }, async (t) => {
  const app = Fastify({ logger: false })
  // Node's own headers timeout would end the spare connection after a minute; with it off, only
  // the module can, and without the module this test times out.
  app.server.headersTimeout = 0
  app.server.requestTimeout = 0
  closeUnusedConnectionsOnClose(app.server)
  app.get('/ok', async () => ({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  // A spare connection, as HTTP clients and proxies open ahead of need, and one that is in use.
  const spare = connect(port, '127.0.0.1')
  await new Promise((resolve) => spare.once('connect', resolve))
  const ended = new Promise<boolean>((resolve) => spare.once('close', () => resolve(true)))
  const used = await fetch(`http://127.0.0.1:${port}/ok`)
  t.equal(used.status, 200)
  await used.body?.cancel()
  await app.close()
  t.ok(await ended, 'the spare connection was ended by the close')
})
