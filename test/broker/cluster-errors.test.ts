// A Redis that refuses the broker's connections (here: a local server speaking RESP that answers
// every command with "max number of clients reached", as a full Redis does) must be reported and
// retried, never crash the process. CI once lost a whole run to exactly this.
import t from 'tap'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { redisClusterParts } from '../../broker/cluster.js'

t.test('Redis errors on the cluster connections are reported, not thrown', async (t) => {
  const sockets = new Set<Socket>()
  let connections = 0
  const refusing = createServer((socket) => {
    connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    socket.on('data', () => socket.write('-ERR max number of clients reached\r\n'))
  })
  await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve))
  const { port } = refusing.address() as AddressInfo

  const seen = new Map<string, Error>()
  let crashed: unknown
  const onCrash = (err: unknown) => (crashed = err)
  process.on('uncaughtException', onCrash)
  t.teardown(() => process.off('uncaughtException', onCrash))

  const parts = redisClusterParts(`redis://127.0.0.1:${port}`, 'test:', (err, part) => seen.set(part, err))
  const deadline = Date.now() + 10_000
  while ((!seen.has('emitter') || !seen.has('persistence')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))

  t.equal(crashed, undefined, 'no uncaught exception')
  t.match(seen.get('emitter')?.message, /max number of clients/, 'the emitter connection reported it')
  t.match(seen.get('persistence')?.message, /max number of clients/, 'the persistence connection reported it')
  t.ok(connections >= 3, 'all three connections were attempted')

  await parts.close()
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 2000)
    parts.mq.close(() => {
      clearTimeout(timer)
      resolve()
    })
  })
  for (const s of sockets) s.destroy()
  await new Promise<void>((resolve) => refusing.close(() => resolve()))
})
