// GET /docs: the page and every asset it references come from this service (nothing from another
// host, so it works with no network), it loads the same document as /api/openapi.json, and what
// a developer does on it works: sign up, pair a device, send it a prompt, each request made the
// way the page makes it (same origin, the browser's session cookie, no token pasted anywhere).
import t from 'tap'
import { AUTH_BASE_PATH } from '../../src/auth/auth.js'
import type { OpenApiDocument } from '../../src/openapi/types.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { CookieJar, uniqueEmail } from '../helpers/client.js'
import { close, connect, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

let svc: TestApp

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
})

/** Every src/href in the page, and every url(…) or @import in a stylesheet. */
const htmlRefs = (html: string) => [...html.matchAll(/\b(?:src|href)\s*=\s*"([^"]+)"/g)].map((m) => m[1]!)
const cssRefs = (css: string) => [
  ...[...css.matchAll(/url\(\s*(['"]?)([^'")]+)\1\s*\)/g)].map((m) => m[2]!),
  ...[...css.matchAll(/@import\s+(?:url\()?['"]?([^'")\s;]+)/g)].map((m) => m[1]!),
]

/** Absolute http(s) URLs in a text: none may point anywhere but here. */
const foreignUrls = (text: string, origin: string) =>
  [...text.matchAll(/https?:\/\/[^\s"'`)<>]+/g)].map((m) => m[0]).filter((u) => !u.startsWith(origin))

for (const page of ['/docs', '/docs/']) {
  t.test(`${page} and every asset it references are served by this service`, async (t) => {
    const res = await appFetch(`${svc.url}${page}`)
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^text\/html/)
    const html = await res.text()
    t.same(foreignUrls(html, svc.url), [], 'the page names no other host')
    const refs = htmlRefs(html)
    t.ok(
      refs.some((r) => r.endsWith('/swagger-ui-bundle.js')),
      'loads the Swagger UI bundle',
    )
    t.ok(
      refs.some((r) => r.endsWith('/swagger-initializer.js')),
      'loads its initializer',
    )
    t.ok(
      refs.some((r) => r.endsWith('/swagger-ui.css')),
      'loads the stylesheet',
    )
    for (const ref of refs) {
      const url = new URL(ref, `${svc.url}${page}`)
      t.equal(url.origin, svc.url, `${ref} is on this origin`)
      const asset = await appFetch(url)
      t.equal(asset.status, 200, `${url.pathname} served`)
      const type = asset.headers.get('content-type') ?? ''
      const body = await asset.text()
      t.ok(body.length > 0, `${url.pathname} not empty`)
      if (url.pathname.endsWith('.js')) t.match(type, /javascript/, `${url.pathname} is JavaScript`)
      if (url.pathname.endsWith('.css')) {
        t.match(type, /text\/css/)
        const outside = cssRefs(body).filter((r) => !r.startsWith('data:') && new URL(r, url).origin !== svc.url)
        t.same(outside, [], `${url.pathname} pulls in nothing from elsewhere`)
      }
      if (url.pathname.endsWith('/swagger-initializer.js')) {
        const code = body
          .split('\n')
          .filter((line) => !line.trim().startsWith('//'))
          .join('\n')
        t.same(foreignUrls(code, svc.url), [], 'the initializer names no other host (comments aside)')
        t.match(body, /url: resolveUrl\('\.\/json'\)/, 'the page loads ./json next to itself')
        t.match(body, /validatorUrl: null/, "no call to the public spec validator's badge")
      }
    }
  })
}

t.test('the page loads the same document as /api/openapi.json, served from this origin', async (t) => {
  const pageDoc = (await (await appFetch(`${svc.url}/docs/json`)).json()) as OpenApiDocument
  const apiDoc = (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as OpenApiDocument
  t.same(pageDoc, apiDoc)
  t.same(
    apiDoc.servers,
    [{ url: '/', description: 'This service (the origin serving this document)' }],
    '"try it" sends to the origin of the page',
  )
  const yaml = await appFetch(`${svc.url}/docs/yaml`)
  t.equal(yaml.status, 200)
  t.match(await yaml.text(), /^openapi: 3\.1\.0$/m)
})

t.test('from the docs page alone: sign up, pair a device, send it a prompt', async (t) => {
  const doc = (await (await appFetch(`${svc.url}/docs/json`)).json()) as OpenApiDocument
  // Swagger UI resolves the server URL against the document's URL and sends the browser's cookies.
  const base = new URL(doc.servers![0]!.url, `${svc.url}/docs/json`)
  const jar = new CookieJar()
  const tryIt = async (method: string, path: string, body: unknown) => {
    t.ok(doc.paths[path]?.[method.toLowerCase()], `${method} ${path} is on the page`)
    const headers: Record<string, string> = { 'content-type': 'application/json', origin: svc.url }
    if (jar.size) headers.cookie = jar.header()
    const res = await appFetch(new URL(path.replace(/^\//, ''), base), { method, headers, body: JSON.stringify(body), redirect: 'manual' })
    jar.store(res)
    return { status: res.status, body: (await res.json()) as Record<string, any> }
  }
  // The simulator's side: plain HTTP, no account.
  const device = async (path: string, body: unknown) => {
    const res = await appFetch(`${svc.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return (await res.json()) as Record<string, any>
  }

  const signUp = await tryIt('POST', `${AUTH_BASE_PATH}/sign-up/email`, {
    email: uniqueEmail('docs'),
    password: 'a-long-password',
    name: 'Docs Reader',
  })
  t.equal(signUp.status, 200)
  t.ok(jar.size > 0, 'the browser now holds the session cookie')
  const cookieScheme = doc.components.securitySchemes?.cookieAuth as { name: string }
  t.match(jar.header(), new RegExp(`(^|; )${cookieScheme.name.replace(/\./g, '\\.')}=`), 'the cookie is the documented cookieAuth')

  const init = await device('/api/device/init', { display: { width: 800, height: 480, palette: 'bw' }, model: 'sim', firmware: '1.0.0' })
  const validated = await tryIt('POST', '/api/device/validate', { pinCode: init.pinCode, name: 'Kitchen frame' })
  t.equal(validated.status, 200, 'paired with the cookie alone')
  t.equal(validated.body.device.id, init.deviceId)
  t.same(
    doc.paths['/api/device/validate']?.post?.security?.some((s) => 'cookieAuth' in s),
    true,
    'documented as taking the cookie',
  )

  const record = await device('/api/device/get-init-device', { deviceId: init.deviceId, deviceCode: init.deviceCode })
  const creds = record.credentials as { username: string; password: string; clientId: string; mqttUrl: string }
  t.ok(creds, 'the device received its MQTT credentials')
  const mqtt = await connect(`mqtt://127.0.0.1:${svc.app.mqttPort}`, {
    clientId: creds.clientId,
    username: creds.username,
    password: creds.password,
  })
  t.teardown(() => close(mqtt))
  await subscribe(mqtt, `devices/${init.deviceId}/prompt`)
  const arrives = nextMessage<{ text: string }>(mqtt, `devices/${init.deviceId}/prompt`)

  const prompt = await tryIt('POST', '/api/prompts', { text: 'a lighthouse at dawn', deviceId: init.deviceId })
  t.equal(prompt.status, 201, 'prompt created from the page')
  t.match((await arrives).payload, { text: /a lighthouse at dawn/ }, 'the device got the prompt')
})
