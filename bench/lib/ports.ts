// Loopback only: free ports for the servers the benchmarks start, and source addresses
// (127.0.0.x) so tens of thousands of client connections do not run out of ephemeral ports.
import { createServer } from 'node:net'

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/** 127.0.0.2 … 127.0.0.(1+n): every address in 127/8 is loopback on Linux. */
export const sourceAddresses = (n: number, offset = 0) => Array.from({ length: n }, (_, i) => `127.0.0.${2 + ((offset + i) % 250)}`)
