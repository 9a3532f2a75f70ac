// A connection that was opened but has not sent a request yet (HTTP clients and proxies open spare
// ones ahead of need) is not idle to Node's closeIdleConnections, so a shutdown would wait for the
// headers timeout (a minute) before it ends. On close, such connections are ended at once; those
// serving a request finish it first as before.
import type { Server } from 'node:http'
import type { Socket } from 'node:net'

export function closeUnusedConnectionsOnClose(server: Server): void {
  const unused = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    unused.add(socket)
    socket.once('close', () => unused.delete(socket))
  })
  server.on('request', (req) => unused.delete(req.socket))
  server.once('close', () => unused.clear())
  const close = server.close.bind(server)
  server.close = (callback) => {
    close(callback)
    for (const socket of unused) socket.destroy()
    return server
  }
}
