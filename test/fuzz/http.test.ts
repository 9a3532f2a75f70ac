// Every operation of the OpenAPI document, anonymous and with a session, sent what an attacker or
// a broken client sends: missing fields, wrong types, 1 MB strings, NUL bytes, invalid UTF-8,
// duplicate keys, __proto__ keys, 20,000 levels of nesting, wrong content types, and path
// parameters that are not ids or are 10 KB long. No answer may be a 5xx, every error must be JSON
// with `message` and `code`, and the service must still answer afterwards.
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; $ref?: string; items?: Schema }
type Operation = {
  parameters?: Array<{ in: string; name: string; schema?: Schema }>
  requestBody?: { content?: Record<string, { schema?: Schema }> }
  responses?: unknown
}
type Probe = { label: string; method: string; path: string; headers?: Record<string, string>; body?: string | Uint8Array; page?: boolean }

const MB = 1024 * 1024
const PASSWORD = 'correct-horse-battery'
const CONCURRENCY = 8

/** A value of the wrong type for a property of this type. */
function wrongType(s: Schema | undefined): unknown {
  const type = Array.isArray(s?.type) ? s?.type[0] : s?.type
  switch (type) {
    case 'string':
      return 12345
    case 'integer':
    case 'number':
      return 'not a number'
    case 'boolean':
      return 'yes'
    case 'array':
      return { not: 'an array' }
    case 'object':
      return ['not', 'an', 'object']
    default:
      return [[null]]
  }
}

function resolve(doc: { components?: { schemas?: Record<string, Schema> } }, s: Schema | undefined): Schema | undefined {
  if (s?.$ref) return doc.components?.schemas?.[s.$ref.split('/').pop()!]
  return s
}

const mapProps = (props: Record<string, Schema>, f: (name: string, s: Schema) => unknown) =>
  JSON.stringify(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, f(k, v)])))

/** The bodies to send to an operation that takes one. */
function bodies(props: Record<string, Schema>): Array<{ label: string; type: string; body: string | Uint8Array }> {
  const names = Object.keys(props)
  const json = 'application/json'
  const stringish = (s: Schema) => (Array.isArray(s.type) ? s.type.includes('string') : s.type === 'string' || s.type === undefined)
  return [
    { label: 'empty object', type: json, body: '{}' },
    { label: 'wrong types', type: json, body: mapProps(props, (_, s) => wrongType(s)) },
    { label: '1 MB strings', type: json, body: mapProps(props, (_, s) => (stringish(s) ? 'a'.repeat(MB) : wrongType(s))) },
    { label: 'NUL bytes', type: json, body: mapProps(props, () => 'a\u0000b') },
    {
      label: 'invalid UTF-8',
      type: json,
      body: Buffer.concat([Buffer.from(`{"${names[0] ?? 'a'}":"`), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('"}')]),
    },
    { label: 'duplicate keys', type: json, body: `{${(names.length ? names : ['a']).map((n) => `"${n}":"x","${n}":{"y":1}`).join(',')}}` },
    { label: '__proto__ keys', type: json, body: '{"__proto__":{"isAdmin":true},"constructor":{"prototype":{"polluted":true}}}' },
    { label: '20,000 levels', type: json, body: `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}` },
    { label: 'malformed JSON', type: json, body: '{"a":' },
    { label: 'a JSON array', type: json, body: '[1,2,3]' },
    { label: 'text/plain', type: 'text/plain', body: '{"a":1}' },
    { label: 'XML', type: 'application/xml', body: '<a>1</a>' },
    {
      label: 'broken multipart',
      type: 'multipart/form-data; boundary=zz',
      body: '--zz\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nnot an image',
    },
    { label: 'form', type: 'application/x-www-form-urlencoded', body: 'a=1&a=2&__proto__[x]=1' },
  ]
}

const pathValues = [
  ['not an id', 'not-an-id'],
  ['10 KB', 'x'.repeat(10 * 1024)],
  ['encoded NUL', 'a%00b'],
  ['traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['unicode', encodeURIComponent('ü💥\u202e')],
] as const

function probesFor(doc: { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Schema> } }): Probe[] {
  const out: Probe[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== 'object' || !('responses' in op)) continue
      const m = method.toUpperCase()
      const params = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name)
      const fill = (v: string) => path.replace(/\{[^}]+\}/g, v)
      const query = (op.parameters ?? []).filter((p) => p.in === 'query')
      const wrongQuery = query.length
        ? '?' +
          query
            .map(
              (p) =>
                `${encodeURIComponent(p.name)}=${encodeURIComponent(String(wrongType(p.schema)))}&${encodeURIComponent(p.name)}=${'q'.repeat(4096)}`,
            )
            .join('&')
        : '?__proto__[a]=1'
      // A page for people (text/html) answers its errors as a page too.
      const page = JSON.stringify((op.responses as Record<string, unknown> | undefined)?.['200'] ?? {}).includes('text/html')
      const base = fill('00000000-0000-4000-8000-000000000000')
      out.push({ label: 'plain', method: m, path: base, page }, { label: 'wrong query', method: m, path: base + wrongQuery, page })
      if (params.length) for (const [label, v] of pathValues) out.push({ label: `path ${label}`, method: m, path: fill(v), page })
      const json = op.requestBody?.content?.['application/json']?.schema ?? op.requestBody?.content?.['multipart/form-data']?.schema
      if (m !== 'GET' && m !== 'HEAD') {
        const props = resolve(doc, json)?.properties ?? {}
        for (const b of bodies(props))
          out.push({ label: b.label, method: m, path: base, headers: { 'content-type': b.type }, body: b.body, page })
      }
    }
  }
  return out
}

async function run(svc: TestApp, probes: Probe[], auth: () => Promise<Record<string, string>>, problems: string[]) {
  let next = 0
  const lane = async () => {
    while (next < probes.length) {
      const p = probes[next++]!
      const headers = { origin: svc.url, ...(await auth()), ...p.headers }
      const res = await appFetch(svc.url + p.path, {
        method: p.method,
        headers,
        body: p.body as BodyInit | undefined,
        redirect: 'manual',
      }).catch((err: Error) => ({ status: 0, err }) as const)
      const where = `${p.method} ${p.path.slice(0, 80)} (${p.label})`
      if (!('headers' in res)) {
        problems.push(`${where}: no answer (${res.err.message})`)
        continue
      }
      const text = p.method === 'HEAD' ? '' : await res.text()
      if (res.status >= 500) problems.push(`${where}: ${res.status} ${text.slice(0, 160)}`)
      else if (res.status >= 400 && p.page && res.headers.get('content-type')?.startsWith('text/html')) continue
      else if (res.status >= 400 && p.method !== 'HEAD') {
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

t.test('no operation answers a 5xx or an error without {message, code}, whatever it is sent', async (t) => {
  const svc = await startApp(t, {
    env: {
      RATE_LIMIT_MAX: '10000000',
      RATE_LIMIT_AUTH_MAX: '10000000',
      BODY_LIMIT: String(2 * MB),
      MQTT_AUTH_SECRET: 'fuzz-hook-secret-0123456789',
    },
  })
  const email = uniqueEmail('fuzz')
  let token = (await signUp(makeClient(svc.url).client, email, PASSWORD)).token
  const doc = (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as Parameters<typeof probesFor>[0]
  const probes = probesFor(doc)
  const problems: string[] = []

  await run(svc, probes, async () => ({}), problems)

  // With a session. Some probes end it (sign-out, revoke): a new one is signed in when it does.
  let checking: Promise<void> | undefined
  const session = async () => {
    checking ??= (async () => {
      const ok = (await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })).status === 200
      if (!ok) {
        const res = await appFetch(`${svc.url}/sign-in/email`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: svc.url },
          body: JSON.stringify({ email, password: PASSWORD }),
        })
        token = ((await res.json()) as { token: string }).token
      }
    })().finally(() => setTimeout(() => (checking = undefined), 50))
    await checking
    return { authorization: `Bearer ${token}` }
  }
  await run(svc, probes, session, problems)

  t.ok(probes.length > 1000, `${probes.length * 2} requests over ${Object.keys(doc.paths).length} paths`)
  t.same(problems, [], 'no 5xx, every error with {message, code}')
  const after = await appFetch(`${svc.url}/api/openapi.json`)
  t.equal(after.status, 200, 'the service still answers')
  await after.body?.cancel()
})
