// A body over the limit is answered 413 {message, code} that the client can read, even while it is
// still sending: the service reads and throws away the rest of the body (up to a bound) before it
// answers and closes. Before, the socket closed under a client still writing, which got EPIPE and
// never saw the answer (Node's fetch and mobile HTTP stacks on real networks; a sender that writes
// in chunks with pauses shows it on loopback).
import t from 'tap'
import { request } from 'node:http'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'

type Outcome = { status?: number; code?: string; error?: string }

/** Sends `size` bytes in 64 KiB chunks, 2 ms apart, as a client on a slow link does; `chunked` without a Content-Length. */
function slowPost(url: string, headers: Record<string, string>, size: number, chunked = false): Promise<Outcome> {
  return new Promise((resolve) => {
    const u = new URL(url)
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: { ...headers, ...(chunked ? {} : { 'content-length': String(size) }) },
      },
      (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString('utf8')))
        res.on('end', () => resolve({ status: res.statusCode, code: (JSON.parse(text) as { code?: string }).code }))
      },
    )
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }))
    const chunk = Buffer.alloc(65536, 0x20)
    let sent = 0
    const pump = () => {
      if (req.destroyed) return
      if (sent >= size) return req.end()
      const n = Math.min(chunk.length, size - sent)
      sent += n
      req.write(chunk.subarray(0, n))
      setTimeout(pump, 2)
    }
    pump()
  })
}

t.test('a body over the limit gets a 413 the client reads, however it sends it', async (t) => {
  // Sockets: the limit is tested over the wire, and the client's own calls with it.
  const svc = await startApp(t, { sockets: true, env: { BODY_LIMIT: String(256 * 1024), UPLOAD_MAX_BYTES: String(512 * 1024) } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('big-body'))
  const json = { 'content-type': 'application/json', authorization: `Bearer ${token}`, origin: svc.url }
  const cases: Array<[string, string, Record<string, string>, boolean]> = [
    ['one of our routes, Content-Length over the limit', '/api/prompts', json, false],
    ['one of our routes, chunked, over the limit on the way', '/api/prompts', json, true],
    ["Better Auth's routes", '/api/auth/sign-in/email', json, false],
    ["Better Auth's social callback", '/api/auth/callback/google', { ...json, 'content-type': 'application/x-www-form-urlencoded' }, false],
    ['an upload over its size limit', '/api/upload', { ...json, 'content-type': 'multipart/form-data; boundary=x' }, false],
  ]
  for (const [what, path, headers, chunked] of cases) {
    const outcome = await slowPost(`${svc.url}${path}`, headers, 3 * 1024 * 1024, chunked)
    t.same(outcome, { status: 413, code: 'PAYLOAD_TOO_LARGE' }, `${what}: 413 PAYLOAD_TOO_LARGE, read by the client`)
  }
  const after = await fetch(`${svc.url}/api/prompts`, { method: 'POST', headers: json, body: JSON.stringify({ text: 'small' }) })
  t.equal(after.status, 201, 'and the service goes on serving')
})
