// Requests that once answered 500 (or an error without `code`) are refused with a 4xx and the
// service's error body: 20,000 levels of nested JSON on ours and on Better Auth's routes, a lone
// surrogate in account-info, an unknown api-key sortBy, an organization update of nothing, a ban
// until after the year 9999, headers over Node's limit, and an image over 40 megapixels.
import t from 'tap'
import { connect } from 'node:net'
import sharp from 'sharp'
import { crc32 } from 'node:zlib'
import { startApp, type TestApp } from '../helpers/app.js'
import { signUpAdmin } from '../helpers/admin.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

let svc: TestApp
let user: { token: string; userId: string }
let admin: { token: string; userId: string }

t.before(async () => {
  const adminEmail = uniqueEmail('no5xx-admin')
  svc = await startApp(t, { env: { ADMIN_EMAILS: adminEmail } })
  admin = await signUpAdmin(svc, adminEmail)
  user = await signUp(makeClient(svc.url).client, uniqueEmail('no5xx'))
})

async function send(path: string, init: { method?: string; token?: string; body?: string | FormData; type?: string } = {}) {
  const headers: Record<string, string> = { origin: svc.url }
  if (init.token) headers.authorization = `Bearer ${init.token}`
  if (init.type) headers['content-type'] = init.type
  const res = await appFetch(svc.url + path, { method: init.method ?? 'POST', headers, body: init.body })
  const text = await res.text()
  let body: { message?: unknown; code?: unknown } = {}
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, body }
}

const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`

t.test('20,000 levels of nesting: 400 BODY_TOO_DEEP on ours and on Better Auth, 64 levels still parse', async (t) => {
  for (const [path, token] of [
    ['/api/device/validate', user.token],
    ['/api/prompts', user.token],
    ['/api/device/init', undefined],
    ['/sign-in/email', undefined],
    ['/api/auth/sign-up/email', undefined],
    ['/api/auth/organization/create', user.token],
  ] as const) {
    const res = await send(path, { token, body: nested(20_000), type: 'application/json' })
    t.equal(res.status, 400, `${path}: 400`)
    t.equal(res.body.code, 'BODY_TOO_DEEP', `${path}: BODY_TOO_DEEP`)
  }
  // Brackets inside strings are text, not nesting.
  const inString = await send('/api/device/init', {
    body: JSON.stringify({ display: { width: 800, height: 480, palette: 'bw' }, model: '['.repeat(90) }),
    type: 'application/json',
  })
  t.not(inString.body.code, 'BODY_TOO_DEEP', 'brackets in a string do not count')
  const sixtyFour = await send('/api/device/init', { body: nested(63), type: 'application/json' })
  t.equal(sixtyFour.status, 400)
  t.not(sixtyFour.body.code, 'BODY_TOO_DEEP', '64 levels are parsed (and then judged by the schema)')
})

t.test('Better Auth inputs that reached the database unchecked', async (t) => {
  const surrogate = await send('/account-info', { token: user.token, body: '{"accountId":"\\ud800"}', type: 'application/json' })
  t.equal(surrogate.status, 400, 'account-info with a lone surrogate')
  t.equal(surrogate.body.code, 'VALIDATION_ERROR')

  const sort = await send('/api/auth/api-key/list?sortBy=nope', { method: 'GET', token: user.token })
  t.equal(sort.status, 400, 'api-key list sorted by an unknown field')
  t.type(sort.body.code, 'string')
  t.equal((await send('/api/auth/api-key/list?sortBy=createdAt', { method: 'GET', token: user.token })).status, 200, 'a known field sorts')

  const org = await send('/api/auth/organization/create', {
    token: user.token,
    body: JSON.stringify({ name: 'Org', slug: `org-${Date.now()}` }),
    type: 'application/json',
  })
  t.equal(org.status, 200)
  const nothing = await send('/api/auth/organization/update', {
    token: user.token,
    body: JSON.stringify({ organizationId: (org.body as { id: string }).id, data: {} }),
    type: 'application/json',
  })
  t.equal(nothing.status, 400, 'an organization update of nothing')
  t.equal(nothing.body.code, 'VALIDATION_ERROR')

  const victim = await signUp(makeClient(svc.url).client, uniqueEmail('no5xx-ban'))
  const ban = await send('/api/auth/admin/ban-user', {
    token: admin.token,
    body: JSON.stringify({ userId: victim.userId, banExpiresIn: 1e308 }),
    type: 'application/json',
  })
  t.equal(ban.status, 400, 'a ban until after the year 9999')
  t.equal(ban.body.code, 'VALIDATION_ERROR')
  t.equal(
    (
      await send('/api/auth/admin/ban-user', {
        token: admin.token,
        body: JSON.stringify({ userId: victim.userId, banExpiresIn: 3600 }),
        type: 'application/json',
      })
    ).status,
    200,
    'an hour is fine',
  )
})

t.test('headers over the limit: 431 with {message, code}', async (t) => {
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(svc.url).port), '127.0.0.1')
    let data = ''
    socket.on('data', (d) => (data += d.toString('utf8')))
    socket.on('end', () => resolve(data))
    socket.on('close', () => resolve(data))
    socket.on('error', reject)
    socket.write(`GET /api/device HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(40_000)}\r\n\r\n`)
  })
  t.match(raw, /^HTTP\/1\.1 431 /, '431')
  const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { message: string; code: string }
  t.equal(body.code, 'HEADERS_TOO_LARGE')
  t.type(body.message, 'string')
})

/** A real PNG whose header says `w`×`h` (only the header is read before the size is refused). */
async function pngClaiming(w: number, h: number): Promise<Buffer> {
  const png = Buffer.from(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#888' } })
      .png()
      .toBuffer(),
  )
  // IHDR: length(4) "IHDR"(4) width(4) height(4) … CRC over type and data.
  png.writeUInt32BE(w, 16)
  png.writeUInt32BE(h, 20)
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29)
  return png
}

t.test('an image over 40 megapixels is 413, not 415', async (t) => {
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(await pngClaiming(8000, 6000))], { type: 'image/png' }), 'huge.png')
  const res = await send('/api/upload', { token: user.token, body: form })
  t.equal(res.status, 413)
  t.equal(res.body.code, 'IMAGE_TOO_LARGE')
})
