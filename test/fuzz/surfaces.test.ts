// The newer surfaces, fuzzed from inputs that almost pass: firmware uploads (multipart with
// malformed parts), device log batches (over HTTP with the device's secret and over MQTT up/log),
// playlists and schedules (each field of the documented example replaced by what an attacker or a
// broken client sends, on real ids, so the bodies reach the services and not only the schemas).
// No answer may be a 5xx, every error is {message, code}, the MQTT connection that sent junk
// stays up, and the service answers afterwards.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { signUpAdmin } from '../helpers/admin.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { connect, eventually, mqttUrl } from '../helpers/mqtt.js'
import { uploadPng } from '../helpers/uploads.js'
import { appFetch } from '../helpers/app-fetch.js'

const CONCURRENCY = 6
const ADMIN = 'fuzz-admin@example.com'

/** Values that replace one field at a time. */
const BAD: Array<[string, unknown]> = [
  ['null', null],
  ['true', true],
  ['zero', 0],
  ['negative', -1],
  ['fraction', 1.5],
  ['huge number', 1e308],
  ['2^53', 2 ** 53],
  ['empty string', ''],
  ['10 KB string', 'x'.repeat(10_000)],
  ['NUL', 'a\u0000b'],
  ['lone surrogate', 'a\ud800b'],
  ['traversal', '../../etc/passwd'],
  ['bad date', '2024-02-30T25:61:00Z'],
  ['bad time', '25:61'],
  ['bad zone', 'Mars/Olympus_Mons'],
  ['markup', '<script>alert(1)</script>'],
  ['empty array', []],
  ['array of junk', [null, 1, 'x', {}, []]],
  ['object', { a: { b: [1] } }],
  ['deep', JSON.parse(`${'['.repeat(60)}1${']'.repeat(60)}`)],
]

/** Every body that is the example with one value (or one container) replaced, plus whole-body junk. */
function mutations(example: unknown): Array<{ label: string; body: string }> {
  const out: Array<{ label: string; body: string }> = []
  const walk = (value: unknown, path: Array<string | number>) => {
    for (const [label, bad] of BAD)
      out.push({ label: `${path.join('.') || 'body'} = ${label}`, body: JSON.stringify(setAt(example, path, bad)) })
    if (Array.isArray(value)) {
      const big = Array.from({ length: 5000 }, () => value[0] ?? 1)
      out.push({ label: `${path.join('.')} × 5000`, body: JSON.stringify(setAt(example, path, big)) })
      value.forEach((v, i) => walk(v, [...path, i]))
    } else if (value && typeof value === 'object') {
      out.push({ label: `${path.join('.') || 'body'} + unknown key`, body: JSON.stringify(setAt(example, path, { ...value, extra: 1 })) })
      out.push({
        label: `${path.join('.') || 'body'} + __proto__`,
        body: JSON.stringify(setAt(example, path, value)).replace(/^\{/, '{"__proto__":{"polluted":true},'),
      })
      for (const [k, v] of Object.entries(value)) {
        const without = { ...(value as Record<string, unknown>) }
        delete without[k]
        out.push({ label: `${[...path, k].join('.')} missing`, body: JSON.stringify(setAt(example, path, without)) })
        walk(v, [...path, k])
      }
    }
  }
  walk(example, [])
  out.push({ label: 'duplicate keys', body: JSON.stringify(example).replace(/^\{"(\w+)":/, '{"$1":"x","$1":') })
  return out
}

function setAt(root: unknown, path: Array<string | number>, value: unknown): unknown {
  if (!path.length) return value
  const [head, ...rest] = path
  if (Array.isArray(root)) return root.map((v, i) => (i === head ? setAt(v, rest, value) : v))
  return { ...(root as Record<string, unknown>), [head as string]: setAt((root as Record<string, unknown>)[head as string], rest, value) }
}

type Probe = { label: string; method: string; path: string; headers: Record<string, string>; body?: string | Uint8Array | FormData }

async function run(base: string, probes: Probe[], problems: string[]) {
  let next = 0
  const lane = async () => {
    while (next < probes.length) {
      const p = probes[next++]!
      const where = `${p.method} ${p.path.slice(0, 70)} (${p.label.slice(0, 80)})`
      const res = await appFetch(base + p.path, { method: p.method, headers: p.headers, body: p.body as BodyInit }).catch(
        (err: Error) => err,
      )
      if (res instanceof Error) {
        problems.push(`${where}: no answer (${res.message})`)
        continue
      }
      const text = await res.text()
      if (res.status >= 500) problems.push(`${where}: ${res.status} ${text.slice(0, 160)}`)
      else if (res.status >= 400) {
        let body: { message?: unknown; code?: unknown } = {}
        try {
          body = JSON.parse(text)
        } catch {}
        if (typeof body.message !== 'string' || typeof body.code !== 'string')
          problems.push(`${where}: ${res.status} without {message, code}: ${text.slice(0, 120)}`)
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane))
}

/** A raw multipart body: each part's headers and content as given, with `boundary`. */
function multipart(boundary: string, parts: Array<{ headers: string[]; content: string | Uint8Array }>, end = `--${boundary}--\r\n`) {
  const chunks: Uint8Array[] = []
  for (const p of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\n${p.headers.join('\r\n')}\r\n\r\n`))
    chunks.push(typeof p.content === 'string' ? Buffer.from(p.content) : p.content)
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(end))
  return Buffer.concat(chunks)
}

const field = (name: string, value: string | Uint8Array) => ({
  headers: [`Content-Disposition: form-data; name="${name}"`],
  content: value,
})
const file = (content: Uint8Array, name = 'fw.bin', extra: string[] = []) => ({
  headers: [`Content-Disposition: form-data; name="file"; filename="${name}"`, 'Content-Type: application/octet-stream', ...extra],
  content,
})

function firmwareProbes(adminToken: string): Probe[] {
  const B = 'fuzzboundary'
  const good = [field('model', 'fuzz-frame'), field('version', '1.0.0'), field('channel', 'stable')]
  const image = new Uint8Array(1024).fill(3)
  const bodies: Array<[string, Uint8Array | string, string?]> = [
    ['no parts', multipart(B, [])],
    ['no file', multipart(B, good)],
    ['file only', multipart(B, [file(image)])],
    ['file before the fields', multipart(B, [file(image), ...good])],
    ['two files', multipart(B, [...good, file(image), file(image, 'b.bin')])],
    ['empty file', multipart(B, [...good, file(new Uint8Array(0))])],
    ['file over FIRMWARE_MAX_BYTES', multipart(B, [...good, file(new Uint8Array(20_000).fill(1))])],
    ['unterminated', multipart(B, [...good, file(image)], '')],
    ['truncated in a part', multipart(B, [...good, file(image)], '').subarray(0, 150)],
    ['wrong boundary', multipart('other', [...good, file(image)])],
    ['no Content-Disposition', multipart(B, [...good, { headers: ['Content-Type: text/plain'], content: 'x' }, file(image)])],
    ['part without a name', multipart(B, [...good, { headers: ['Content-Disposition: form-data'], content: 'x' }, file(image)])],
    ['huge field', multipart(B, [field('model', 'm'.repeat(40_000)), field('version', '1.0.0'), field('channel', 'stable'), file(image)])],
    ['too many fields', multipart(B, [...good, field('a', '1'), field('b', '2'), field('c', '3'), file(image)])],
    [
      'too many part headers',
      multipart(B, [...good, { ...file(image), headers: [...file(image).headers, ...Array.from({ length: 60 }, (_, i) => `X-H${i}: v`)] }]),
    ],
    [
      'NUL in a field',
      multipart(B, [field('model', 'fuzz\u0000frame'), field('version', '1.0.0'), field('channel', 'stable'), file(image)]),
    ],
    ['NUL in a field name', multipart(B, [field('mo\u0000del', 'x'), ...good, file(image)])],
    [
      'invalid UTF-8 in a field',
      multipart(B, [field('model', Buffer.from([0xff, 0xfe, 0x41])), field('version', '1.0.0'), field('channel', 'stable'), file(image)]),
    ],
    [
      'version not semver',
      multipart(B, [field('model', 'fuzz-frame'), field('version', '1.0.0.0.0-%00'), field('channel', 'stable'), file(image)]),
    ],
    [
      'version 10 KB',
      multipart(B, [
        field('model', 'fuzz-frame'),
        field('version', `1.0.0-${'a'.repeat(10_000)}`),
        field('channel', 'stable'),
        file(image),
      ]),
    ],
    ['model traversal', multipart(B, [field('model', '../../etc'), field('version', '1.0.0'), field('channel', 'stable'), file(image)])],
    ['channel twice', multipart(B, [...good, field('channel', 'beta'), file(image)])],
    ['channel unknown', multipart(B, [field('model', 'fuzz-frame'), field('version', '1.0.1'), field('channel', 'nightly'), file(image)])],
    ['notes 5000', multipart(B, [...good, field('notes', 'n'.repeat(5000)), file(image)])],
    ['filename with CRLF and traversal', multipart(B, [...good, file(image, '../../x\r\nX-Injected: 1')])],
    [
      'nested multipart/mixed',
      multipart(B, [
        ...good,
        {
          headers: ['Content-Disposition: form-data; name="file"', 'Content-Type: multipart/mixed; boundary=inner'],
          content: '--inner\r\n\r\nx\r\n--inner--',
        },
      ]),
    ],
    ['garbage', 'this is not multipart at all'],
    ['JSON instead', JSON.stringify({ model: 'm', version: '1.0.0', channel: 'stable' }), 'application/json'],
    ['multipart without boundary', multipart(B, [...good, file(image)]), 'multipart/form-data'],
    ['boundary of 300 characters', multipart('b'.repeat(300), [...good, file(image)]), `multipart/form-data; boundary=${'b'.repeat(300)}`],
  ]
  return bodies.map(([label, body, type]) => ({
    label: `firmware: ${label}`,
    method: 'POST',
    path: '/api/admin/firmware',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': type ?? `multipart/form-data; boundary=${B}` },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  }))
}

/** Log batches an abusive or broken device sends (over HTTP and MQTT alike). */
function logBatches(): Array<[string, string]> {
  const entry = { at: '2025-06-01T07:30:00.000Z', level: 'info', message: 'Image shown', fields: { imageId: 'b7e1c2d3' } }
  const batches: Array<[string, unknown]> = [
    ['an object', { logs: [entry] }],
    ['a string', 'hello'],
    ['a number', 42],
    ['null', null],
    ['empty', []],
    ['101 entries', Array.from({ length: 101 }, () => entry)],
    ['entries of junk', [null, 1, 'x', [], true]],
    ['message missing', [{ at: entry.at, level: 'info' }]],
    ['message an object', [{ ...entry, message: { a: 1 } }]],
    ['message 2,000', [{ ...entry, message: 'm'.repeat(2000) }]],
    ['message empty', [{ ...entry, message: '' }]],
    ['message a lone surrogate', [{ ...entry, message: 'a\ud800' }]],
    ['fields a lone surrogate key', [{ ...entry, fields: { 'k\udc00': 1 } }]],
    ['fields an array', [{ ...entry, fields: [1, 2] }]],
    ['fields a string', [{ ...entry, fields: 'x' }]],
    ['fields 3 KiB', [{ ...entry, fields: { big: 'f'.repeat(3000) } }]],
    ['fields deep', [{ ...entry, fields: JSON.parse(`${'{"a":'.repeat(50)}1${'}'.repeat(50)}`) }]],
    ['fields __proto__', [{ ...entry, fields: JSON.parse('{"__proto__":{"polluted":true}}') }]],
    ['at far future', [{ ...entry, at: '9999-12-31T23:59:59Z' }]],
    ['at year 0', [{ ...entry, at: '0000-01-01T00:00:00Z' }]],
    ['at 1e400', [{ ...entry, at: 1e308 * 10 }]],
    ['at negative', [{ ...entry, at: -8.64e15 - 1 }]],
    ['at an object', [{ ...entry, at: { $date: 1 } }]],
    ['at bad date', [{ ...entry, at: '2024-02-30T25:61:00Z' }]],
    ['level unknown', [{ ...entry, level: 'emergency' }]],
    ['level a number', [{ ...entry, level: 5 }]],
    ['60 KiB in one entry', [{ ...entry, message: 'm'.repeat(1000), fields: { pad: 'p'.repeat(60_000) } }]],
  ]
  return [
    ...batches.map(([label, b]) => [label, JSON.stringify(b)] as [string, string]),
    ['NUL escaped', JSON.stringify([{ ...entry, message: 'a\u0000b' }])],
    ['malformed JSON', '[{"message":'],
    ['invalid UTF-8', `[{"message":"${Buffer.from([0xff, 0xfe]).toString('latin1')}"}]`],
    ['70 KiB batch', JSON.stringify(Array.from({ length: 70 }, () => ({ ...entry, message: 'm'.repeat(1000) })))],
  ]
}

t.test('firmware uploads, log batches, playlists and schedules: no 5xx, every error {message, code}', async (t) => {
  const svc = await startApp(t, {
    env: {
      DEVICE_POLL_INTERVAL: '0',
      ADMIN_EMAILS: ADMIN,
      FIRMWARE_MAX_BYTES: '8192',
      RATE_LIMIT_MAX: '10000000',
      RATE_LIMIT_AUTH_MAX: '10000000',
      LOG_RATE_PER_MINUTE: '100000',
      LOG_BURST: '100000',
    },
  })
  const admin = await signUpAdmin(svc, ADMIN)
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('fuzz-surfaces'))
  const dev = await pairDevice(svc, token)
  const key = await uploadPng(svc.url, token, '#446688')
  const user = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  const post = async (path: string, body: unknown, method = 'POST') => {
    const res = await appFetch(svc.url + path, { method, headers: user, body: JSON.stringify(body) })
    const json = (await res.json()) as Record<string, unknown>
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`)
    return json
  }
  const playlist = await post('/api/playlists', { name: 'Fuzz', mode: 'sequential', itemSeconds: 600, items: [{ kind: 'upload', key }] })
  await post(`/api/playlists/${playlist.id}/items`, { item: { kind: 'upload', key }, position: 0 })
  const full = (await (await appFetch(`${svc.url}/api/playlists/${playlist.id}`, { headers: user })).json()) as {
    items: Array<{ id: string }>
  }
  const itemIds = full.items.map((i) => i.id)

  // The documented examples, on this account's real ids, each field replaced in turn.
  const doc = (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as {
    paths: Record<
      string,
      Record<string, { requestBody?: { content?: Record<string, { example?: unknown; schema?: { examples?: unknown[] } }> } }>
    >
  }
  const real = (s: string) =>
    s
      .replace(/uploads\/[^"]+\.jpg/g, key)
      .replace(/"playlistId":"[^"]+"/g, `"playlistId":"${playlist.id}"`)
      .replace(/"itemIds":\[[^\]]*\]/g, JSON.stringify({ itemIds }).slice(1, -1))
  const probes: Probe[] = []
  const targets: Array<[string, string, string]> = [
    ['post', '/api/playlists', '/api/playlists'],
    ['patch', '/api/playlists/{id}', `/api/playlists/${playlist.id}`],
    // Before items are added by the next one: an order names every item.
    ['put', '/api/playlists/{id}/order', `/api/playlists/${playlist.id}/order`],
    ['post', '/api/playlists/{id}/items', `/api/playlists/${playlist.id}/items`],
    ['put', '/api/device/{id}/schedule', `/api/device/${dev.deviceId}/schedule`],
  ]
  for (const [method, docPath, path] of targets) {
    const media = doc.paths[docPath]?.[method]?.requestBody?.content?.['application/json']
    const example = media?.example ?? media?.schema?.examples?.[0]
    t.ok(example, `${method.toUpperCase()} ${docPath} has an example to start from`)
    const start = JSON.parse(real(JSON.stringify(example)))
    const ok = await appFetch(svc.url + path, { method: method.toUpperCase(), headers: user, body: JSON.stringify(start) })
    t.ok(ok.status < 300, `${method.toUpperCase()} ${docPath}: the example itself is accepted on real ids (${ok.status})`)
    for (const m of mutations(start)) probes.push({ label: m.label, method: method.toUpperCase(), path, headers: user, body: m.body })
  }
  // Log batches over HTTP, with the device's secret (and with a wrong one).
  for (const [label, body] of logBatches()) {
    for (const secret of [dev.password, 'wrong']) {
      probes.push({
        label: `logs: ${label}${secret === 'wrong' ? ' (wrong secret)' : ''}`,
        method: 'POST',
        path: `/api/device/${dev.deviceId}/logs`,
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body,
      })
    }
  }
  // Reading them back with odd filters.
  for (const q of [
    'q=%25_%5C',
    'q=%27%3B--',
    'since=9999-12-31T23:59:59Z',
    'since=2025-13-40T00:00:00Z',
    'level=emergency',
    'limit=0',
    'cursor=%7B%7D',
    `cursor=${'x'.repeat(200)}`,
  ])
    probes.push({
      label: `logs read ${q}`,
      method: 'GET',
      path: `/api/device/${dev.deviceId}/logs?${q}`,
      headers: { authorization: `Bearer ${token}` },
    })
  probes.push(...firmwareProbes(admin.token))
  // The upload route reads multipart the same way.
  for (const p of firmwareProbes(token).filter((p) => /boundary|garbage|unterminated|no parts/.test(p.label)))
    probes.push({ ...p, label: p.label.replace('firmware', 'upload'), path: '/api/upload' })
  probes.push(
    ...firmwareProbes(token)
      .slice(0, 3)
      .map((p) => ({ ...p, label: `${p.label} (not an admin)` })),
  )

  const problems: string[] = []
  await run(svc.url, probes, problems)
  t.ok(probes.length > 800, `${probes.length} requests`)
  t.same(problems, [], 'no 5xx, every error with {message, code}')

  // The same log batches over MQTT up/log, from the device's own connection.
  const device = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: true })
  t.teardown(() => device.end(true))
  type Counts = { droppedInvalid: number; droppedSize: number }
  const counts = async () => {
    const res = await appFetch(`${svc.url}/api/device/${dev.deviceId}/logs?limit=1`, { headers: { authorization: `Bearer ${token}` } })
    if (res.status !== 200) throw new Error(`logs: ${res.status}`)
    const c = ((await res.json()) as { counts: Counts }).counts
    return c.droppedInvalid + c.droppedSize
  }
  const before = await counts()
  for (const [, body] of logBatches()) await device.publishAsync(`devices/${dev.deviceId}/up/log`, body, { qos: 1 })
  await device.publishAsync(`devices/${dev.deviceId}/up/log`, Buffer.from([0xff, 0x00, 0xfe]), { qos: 1 })
  t.equal(device.connected, true, 'the device that sent junk stays connected')
  await eventually(async () => (await counts()) > before)
  t.pass('the owner reads the logs afterwards, with what MQTT sent counted as refused')

  // Afterwards: the service answers, a valid release uploads, a valid schedule saves.
  const form = new FormData()
  form.append('model', 'fuzz-frame')
  form.append('version', '9.9.9')
  form.append('channel', 'beta')
  form.append('file', new Blob([new Uint8Array(512).fill(9)]), 'fw.bin')
  const release = await appFetch(`${svc.url}/api/admin/firmware`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin.token}` },
    body: form,
  })
  t.equal(release.status, 201, 'a well-formed release still uploads')
  const schedule = await appFetch(`${svc.url}/api/device/${dev.deviceId}/schedule`, {
    method: 'PUT',
    headers: user,
    body: JSON.stringify({ timeZone: 'UTC', rules: [{ playlistId: playlist.id, days: ['mon'], from: '00:00', to: '23:59' }], sleep: [] }),
  })
  t.ok(schedule.status < 300, `a well-formed schedule still saves (${schedule.status})`)
  t.equal((await appFetch(`${svc.url}/api/device/${randomUUID()}`, { headers: { authorization: `Bearer ${token}` } })).status, 404)
})
