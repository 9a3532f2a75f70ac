// The data URL fetcher's guards on every hop: a redirect from an allowed address to one that is
// not (another loopback address, IPv6 loopback, a non-http scheme; names resolving to loopback: sources.test.ts)
// is refused before anything is sent there; the policy's ranges; the answer's bounds.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { fetchSource, isPublicAddress } from '../../src/screens/fetch-source.js'

t.test('which addresses are public', async (t) => {
  for (const a of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '224.0.0.1',
  ])
    t.notOk(isPublicAddress(a), a)
  for (const a of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111']) t.ok(isPublicAddress(a), a)
})

t.test('every redirect hop is checked again', async (t) => {
  let hits = 0
  const server = createServer((req, res) => {
    hits++
    const port = (server.address() as AddressInfo).port
    const to: Record<string, string> = {
      '/to-other-loopback': `http://127.0.0.2:${port}/data`,
      '/to-v6': `http://[::1]:${port}/data`,
      '/to-file': 'file:///etc/passwd',
      '/to-data': '/data',
    }
    if (to[req.url ?? '']) return void res.writeHead(302, { location: to[req.url ?? ''] }).end()
    if (req.url === '/loop') return void res.writeHead(302, { location: '/loop' }).end()
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => server.close())
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  // Only this one address is allowed: what a public server is to the default policy.
  const opts = { timeoutMs: 2000, maxBytes: 10_000, as: 'json' as const, allowAddress: (a: string) => a === '127.0.0.1' }
  t.same(await fetchSource(`${base}/to-data`, opts), { ok: true }, 'a redirect to an allowed address is followed')
  for (const path of ['/to-other-loopback', '/to-v6', '/to-file']) {
    const before = hits
    await t.rejects(fetchSource(`${base}${path}`, opts), { code: 'SCREEN_SOURCE_FORBIDDEN' }, path)
    t.equal(hits, before + 1, `${path}: nothing reached the refused address`)
  }
  await t.rejects(fetchSource(`${base}/loop`, opts), { code: 'SCREEN_SOURCE_FAILED', message: /redirects/ })
  await t.rejects(
    fetchSource(`${base}/to-data`, { ...opts, allowAddress: undefined }),
    { code: 'SCREEN_SOURCE_FORBIDDEN' },
    'the default policy refuses loopback',
  )
})
