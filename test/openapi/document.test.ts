// GET /api/openapi.json: every route Fastify answers is in the document, every Better Auth
// endpoint is in it under /api/auth, the document is valid OpenAPI 3.1 with resolvable refs, and
// it carries the interface's tags, security schemes and record names.
import { Validator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { AUTH_BASE_PATH } from '../../src/auth/auth.js'
import { tableC } from '../../src/auth/mount.js'
import { OFF_HERE } from '../../src/openapi/better-auth.js'
import { WILDCARD_PARAM, operationIdFor, operationsOf } from '../../src/openapi/document.js'
import type { OpenApiDocument } from '../../src/openapi/types.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp as registerUser, uniqueEmail } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

type Route = { method: string; url: string }

let svc: TestApp
let doc: OpenApiDocument

t.before(async () => {
  svc = await startApp(t)
  const res = await appFetch(`${svc.url}/api/openapi.json`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/json/)
  doc = (await res.json()) as OpenApiDocument
})

/**
 * Every method and URL in Fastify's router, read from printRoutes' radix tree (a node's full
 * URL is its ancestors' fragments joined). This is the router itself, not the onRoute hook the
 * document is built from, so a route registered before the OpenAPI plugin is caught too.
 */
function registeredRoutes(tree: string): Route[] {
  const routes: Route[] = []
  const fragments: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*)$/.exec(line)
    if (!m) continue
    const depth = m[1]!.length / 4
    let text = m[2]!
    let methods: string[] = []
    const withMethods = /^(.*) \(([A-Z]+(?:, [A-Z]+)*)\)$/.exec(text)
    if (withMethods) {
      text = withMethods[1]!
      methods = withMethods[2]!.split(', ')
    }
    if (text === '(empty root node)') text = ''
    fragments.length = depth
    fragments[depth] = text
    const url = fragments.join('')
    for (const method of methods) routes.push({ method, url })
  }
  return routes
}

/** Fastify's `/api/device/:id` is `/api/device/{id}`; a trailing wildcard is `{path}`. */
const documentedPath = (url: string) => url.replace(/:(\w+)/g, '{$1}').replace(/\*$/, `{${WILDCARD_PARAM}}`)

const has = (method: string, path: string) => Boolean(doc.paths[path]?.[method.toLowerCase()])

/**
 * Routes deliberately not listed as operations, each with the reason. Everything else, wildcards
 * included (e.g. `/files/*` as `/files/{path}`), must be in the document.
 */
const notOperations: Array<{ method: string; url: string; why: string }> = [
  { method: 'OPTIONS', url: '*', why: 'CORS preflight answered by @fastify/cors for every path' },
  ...['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'].map((method) => ({
    method,
    url: `${AUTH_BASE_PATH}/*`,
    why: "Better Auth's pass-through: its endpoints are documented one by one (checked below)",
  })),
  { method: 'GET', url: '/docs/', why: 'trailing-slash alias of GET /docs' },
  { method: 'GET', url: '/docs/static/*', why: "the docs page's assets (docs-page.test.ts fetches each)" },
  { method: 'GET', url: '/docs/static/index.html', why: 'redirect to /docs' },
  { method: 'GET', url: '/docs/static/swagger-initializer.js', why: "the docs page's script" },
  ...['/', '/assets/*', '/favicon.svg', '/sw.js', '/manifest.webmanifest'].map((url) => ({
    method: 'GET',
    url,
    why: "the web console's page and files (test/web/console.test.ts), not API operations",
  })),
]
const excluded = (r: Route) => notOperations.some((n) => n.method === r.method && n.url === r.url)

t.test('every route registered in Fastify is in the document', async (t) => {
  await svc.app.ready()
  const routes = registeredRoutes(svc.app.printRoutes())
  // The parser itself: known routes of several shapes come out whole.
  for (const known of [
    'POST /api/device/init',
    'GET /api/device/:id',
    'POST /revoke-sessions',
    'GET /reset-password/:token',
    'GET /api/openapi.json',
  ]) {
    t.ok(
      routes.some((r) => `${r.method} ${r.url}` === known),
      `route list has ${known}`,
    )
  }
  t.ok(routes.length > 60, `${routes.length} routes read from the router`)
  // /mqtt is a WebSocket upgrade handled on the HTTP server, not a Fastify route.
  t.notOk(
    routes.some((r) => r.url === '/mqtt'),
    '/mqtt is not a route',
  )

  const missing: string[] = []
  for (const route of routes) {
    if (excluded(route)) continue
    // Fastify adds HEAD beside each GET; the GET is the documented operation.
    if (route.method === 'HEAD') {
      if (excluded({ method: 'GET', url: route.url })) continue
      if (!has('GET', documentedPath(route.url))) missing.push(`HEAD ${route.url} (no GET documented)`)
      continue
    }
    if (!has(route.method, documentedPath(route.url))) missing.push(`${route.method} ${route.url}`)
  }
  t.same(missing, [], 'no registered route is missing from /api/openapi.json')

  // And the other way: nothing documented at the root that the router would not answer.
  const answered = new Set(routes.map((r) => `${r.method} ${documentedPath(r.url)}`))
  const phantom = operationsOf(doc)
    .filter(({ path }) => !path.startsWith(`${AUTH_BASE_PATH}/`))
    .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
    .filter((op) => !answered.has(op))
  t.same(phantom, [], 'every documented operation outside /api/auth is a registered route')
})

t.test('every Better Auth endpoint is documented under /api/auth, and nothing else is there', async (t) => {
  const endpoints: Route[] = []
  for (const endpoint of Object.values(svc.app.auth.api as Record<string, unknown>)) {
    const ep = endpoint as { path?: string; options?: { method?: string | string[]; metadata?: { SERVER_ONLY?: boolean } } }
    if (typeof endpoint !== 'function' || !ep.path || ep.options?.metadata?.SERVER_ONLY) continue
    for (const method of [ep.options?.method ?? 'GET'].flat()) endpoints.push({ method, url: ep.path })
  }
  t.ok(endpoints.length > 90, `${endpoints.length} Better Auth endpoints`)
  // Its own reference page loads assets from a CDN; it is turned off in favour of /docs.
  const reference = await appFetch(`${svc.url}${AUTH_BASE_PATH}/reference`)
  t.equal(reference.status, 404, 'Better Auth reference page is off')
  // Left out on purpose: each refuses whatever is sent in this configuration (checked below).
  const served = endpoints.filter((e) => e.url !== '/reference' && !OFF_HERE.has(`${e.method} ${documentedPath(e.url)}`))
  const { token } = await registerUser(makeClient(svc.url).client, uniqueEmail('off-here'))
  for (const op of OFF_HERE) {
    const [method, path] = op.split(' ')
    t.ok(
      endpoints.some((e) => e.method === method && documentedPath(e.url) === path),
      `${op}: Better Auth serves it (else it needs no leaving out)`,
    )
    t.notOk(has(method!, `${AUTH_BASE_PATH}${path}`), `${op} is not in the document`)
    const res = await appFetch(`${svc.url}${AUTH_BASE_PATH}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ newEmail: 'x@example.com', otp: '123456' }),
    })
    t.ok(res.status >= 400 && res.status < 500, `${op} refuses a signed-in call here (${res.status})`)
  }
  const missing = served.filter((e) => !has(e.method, `${AUTH_BASE_PATH}${documentedPath(e.url)}`)).map((e) => `${e.method} ${e.url}`)
  t.same(missing, [], 'every Better Auth endpoint is under /api/auth in the document')

  const known = new Set(served.map((e) => `${e.method} ${AUTH_BASE_PATH}${documentedPath(e.url)}`))
  const extra = operationsOf(doc)
    .filter(({ path }) => path.startsWith(`${AUTH_BASE_PATH}/`))
    .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
    .filter((op) => !known.has(op))
  t.same(extra, [], 'nothing under /api/auth that Better Auth does not serve')

  // One documented operation answers as documented through the real pass-through.
  const ok = await appFetch(`${svc.url}${AUTH_BASE_PATH}/ok`)
  t.same(await ok.json(), { ok: true })
})

t.test("the interface's root paths carry Better Auth's operations", async (t) => {
  for (const [method, path] of tableC) {
    const op = doc.paths[documentedPath(path)]?.[method.toLowerCase()]
    const source = doc.paths[`${AUTH_BASE_PATH}${documentedPath(path)}`]?.[method.toLowerCase()]
    t.ok(op && source, `${method} ${path} documented at the root and under /api/auth`)
    if (!op || !source) continue
    t.same(op.tags, ['default'], `${method} ${path} tagged default`)
    t.same(op.requestBody, source.requestBody, `${method} ${path} takes Better Auth's body`)
    t.same(op.responses, source.responses, `${method} ${path} answers Better Auth's responses`)
    // Named after Better Auth's operation, or (where Better Auth names none) after its own path.
    t.ok(
      [`${source.operationId}AtRoot`, operationIdFor(method, documentedPath(path))].includes(op.operationId!),
      `${method} ${path}: ${op.operationId}`,
    )
  }
  const signUp = doc.paths['/sign-up/email']?.post?.requestBody?.content['application/json']?.schema as { required?: string[] }
  t.same(signUp?.required, ['name', 'email', 'password'], 'root sign-up documents its body')

  const forget = doc.paths['/forget-password']?.post
  t.same(
    forget?.requestBody,
    doc.paths[`${AUTH_BASE_PATH}/request-password-reset`]?.post?.requestBody,
    '/forget-password is request-password-reset',
  )
  const accountInfo = doc.paths['/account-info']?.post
  t.match(accountInfo?.requestBody, { required: true, content: { 'application/json': { schema: { required: ['accountId'] } } } })
  // What it documents is what it does: no accountId is the documented 400 with the Error body
  // (for a caller with a session: an anonymous one gets 401 before its body is read).
  const anonymous = await appFetch(`${svc.url}/account-info`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })
  t.equal(anonymous.status, 401)
  const { token } = await registerUser(makeClient(svc.url).client, uniqueEmail('account-info'))
  const res = await appFetch(`${svc.url}/account-info`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: '{}',
  })
  t.equal(res.status, 400)
  t.match(await res.json(), { message: String, code: 'VALIDATION_ERROR' })
  t.ok(accountInfo?.responses?.['400'], '400 documented')
})

t.test('the document is valid OpenAPI 3.1 and every $ref resolves', async (t) => {
  const validator = new Validator()
  const result = await validator.validate(structuredClone(doc) as never)
  t.same(result.errors ?? [], [], 'no schema errors')
  t.equal(result.valid, true)
  t.equal(validator.version, '3.1')
  t.doesNotThrow(() => validator.resolveRefs(), 'all $refs resolve')

  // The validator does fail on a broken document (so the pass above means something).
  const broken = structuredClone(doc) as OpenApiDocument
  delete (broken.paths['/api/device/init']!.post!.responses!['200'] as { description?: string }).description
  t.equal((await new Validator().validate(broken as never)).valid, false, 'a response without description is refused')
  const dangling = structuredClone(doc) as OpenApiDocument
  dangling.paths['/api/device/init']!.post!.responses!['200'] = { $ref: '#/components/responses/NoSuchThing' }
  const danglingValidator = new Validator()
  const danglingResult = await danglingValidator.validate(dangling as never)
  t.ok(!danglingResult.valid || throws(() => danglingValidator.resolveRefs()), 'a dangling $ref is refused')
})

function throws(fn: () => unknown): boolean {
  try {
    fn()
    return false
  } catch {
    return true
  }
}

t.test('operations are well formed for client generators', async (t) => {
  const ids = operationsOf(doc).map(({ op }) => op.operationId)
  t.same(
    operationsOf(doc)
      .filter(({ op }) => !op.operationId)
      .map(({ method, path }) => `${method} ${path}`),
    [],
    'every operation has an operationId (generated Swift and Kotlin clients name their methods after it)',
  )
  t.same(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    [],
    'operationIds are unique',
  )
  // Made from method and path: stable as long as the route is.
  const idOf = (method: string, path: string) => doc.paths[path]?.[method as 'get']?.operationId
  t.equal(idOf('get', '/api/device/{id}/logs'), 'getDeviceByIdLogs')
  t.equal(idOf('post', '/api/device/{id}/command'), 'postDeviceByIdCommand')
  t.equal(idOf('get', '/device'), 'getDevicePage', 'a page named like an API route says it is the page')
  const problems: string[] = []
  for (const { path, method, op } of operationsOf(doc)) {
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
    const declared = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name)
    if (templated.sort().join() !== declared.sort().join()) problems.push(`${method} ${path}: path ${templated} vs parameters ${declared}`)
    if (!op.tags?.length) problems.push(`${method} ${path}: no tag`)
    if (!Object.keys(op.responses ?? {}).some((s) => s.startsWith('2') || s.startsWith('3')))
      problems.push(`${method} ${path}: no success response`)
  }
  t.same(problems, [])
})

t.test('security schemes: session cookie, bearer session token, JWT', async (t) => {
  const schemes = doc.components.securitySchemes ?? {}
  t.match(schemes.cookieAuth, { type: 'apiKey', in: 'cookie', name: 'better-auth.session_token' })
  t.match(schemes.bearerAuth, { type: 'http', scheme: 'bearer' })
  t.match(schemes.jwtAuth, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
  t.match(schemes.apiKeyAuth, { type: 'apiKey', in: 'header', name: 'x-api-key' })
  const undefinedSchemes = new Set<string>()
  for (const { op } of operationsOf(doc)) {
    for (const requirement of op.security ?? []) for (const name of Object.keys(requirement)) if (!schemes[name]) undefinedSchemes.add(name)
  }
  t.same([...undefinedSchemes], [], 'every scheme an operation names is defined')
  t.same(doc.paths['/api/device/delete']?.delete?.security?.[0], { jwtAuth: [] }, 'device delete takes the JWT')
  t.same(doc.paths['/get-session']?.get?.security, [{ bearerAuth: [] }, { cookieAuth: [] }])
  t.same(doc.paths[`${AUTH_BASE_PATH}/list-sessions`]?.get?.security, [{ bearerAuth: [] }, { cookieAuth: [] }])
})

t.test("tags match the interface's groups", async (t) => {
  const declared = (doc.tags ?? []).map((tag) => tag.name)
  const interfaceTags = [
    'device module',
    'admin API',
    'default',
    'admin',
    'passkey',
    'multi-session',
    'magic-link',
    'email-otp',
    'organization',
  ]
  for (const tag of interfaceTags) t.ok(declared.includes(tag), `tag ${tag} declared`)
  const used = new Set(operationsOf(doc).flatMap(({ op }) => op.tags ?? []))
  for (const tag of used) t.ok(declared.includes(tag), `used tag ${tag} declared`)
  t.equal(new Set(declared).size, declared.length, 'no tag declared twice')
  const tagOf = (method: string, path: string) => doc.paths[path]?.[method]?.tags
  t.same(tagOf('post', '/api/device/init'), ['device module', 'admin API'], 'devices are in both of the interface groups that list them')
  t.same(tagOf('post', `${AUTH_BASE_PATH}/sign-in/email`), ['default'])
  t.same(tagOf('post', `${AUTH_BASE_PATH}/admin/ban-user`), ['admin'])
  t.same(tagOf('post', `${AUTH_BASE_PATH}/passkey/verify-registration`), ['passkey'])
  t.same(tagOf('post', `${AUTH_BASE_PATH}/multi-session/set-active`), ['multi-session'])
  t.same(tagOf('post', `${AUTH_BASE_PATH}/sign-in/magic-link`), ['magic-link'])
  t.same(tagOf('post', `${AUTH_BASE_PATH}/sign-in/email-otp`), ['email-otp'])
  t.same(tagOf('post', `${AUTH_BASE_PATH}/organization/create`), ['organization'])
  const groups = doc['x-tagGroups'] as Array<{ name: string; tags: string[] }>
  t.same(
    groups.map((g) => g.name),
    ['device module', 'admin API', 'account authentication', 'service'],
  )
  t.same(groups.flatMap((g) => g.tags).sort(), [...declared].sort(), 'every tag is in one group')
})

t.test("the interface's record names are component schemas", async (t) => {
  const schemas = doc.components.schemas ?? {}
  const records = [
    'Session',
    'User',
    'Device',
    'DeviceInitRecord',
    'DeviceInformation',
    'Prompt',
    'PromptInput',
    'PromptTemplates',
    'ImageGenerationRequest',
    'ImageGenerationResponse',
    'ImageGenerationResult',
    'Organization',
    'Member',
    'Invitation',
    'Event',
    'Passkey',
    'Apikey',
    'Account',
    'Verification',
    'Error',
  ]
  for (const name of records) t.ok(schemas[name], `components.schemas.${name}`)
  t.equal(schemas.DeviceInitRecord?.title, 'Device initialisation record')
  // Our records keep their names; Better Auth's own User and Session are renamed beside them.
  t.same(Object.keys((schemas.Session as { properties: object }).properties).slice(0, 3), ['id', 'expires_at', 'token'])
  t.ok((schemas.User as { properties: Record<string, unknown> }).properties.email_verified, 'User is the snake_case record')
  t.ok((schemas.AuthUser as { properties: Record<string, unknown> }).properties.emailVerified, "Better Auth's user is AuthUser")
  // Every shared schema of the app (app.addSchema, in any module) is a component under its $id.
  for (const id of Object.keys(svc.app.getSchemas())) t.ok(schemas[id], `shared schema ${id} is a component`)
  // References point at the names, not generated def-N keys.
  t.notMatch(JSON.stringify(doc), /#\/components\/schemas\/def-\d+/, 'no anonymous def-N references')
  t.same(doc.paths['/get-session']?.get?.responses?.['200']?.content?.['application/json']?.schema, {
    type: 'object',
    required: ['session', 'user'],
    properties: { session: { $ref: '#/components/schemas/Session' }, user: { $ref: '#/components/schemas/User' } },
  })
})

t.test('pages and bytes are documented with their media type', async (t) => {
  t.same(Object.keys(doc.paths['/error']?.get?.responses?.['200']?.content ?? {}), ['text/html'])
  t.same(Object.keys(doc.paths['/docs']?.get?.responses?.['200']?.content ?? {}), ['text/html'])
  const page = await appFetch(`${svc.url}/error?error=oops`)
  t.match(page.headers.get('content-type'), /^text\/html/, 'and /error does answer HTML')
  t.same(Object.keys(doc.paths['/files/{path}']?.get?.responses?.['200']?.content ?? {}), ['application/octet-stream'])
})

t.test('error answers are the Error record', async (t) => {
  const responses = (doc.components.responses ?? {}) as Record<string, { content?: Record<string, { schema?: unknown }> }>
  t.same(responses.TooManyRequests?.content?.['application/json']?.schema, { $ref: '#/components/schemas/Error' })
  const signIn = doc.paths[`${AUTH_BASE_PATH}/sign-in/email`]?.post?.responses ?? {}
  t.same(signIn['401'], { $ref: '#/components/responses/Unauthorized' }, "Better Auth's errors are our Error body")
  // …which is what the mount really answers.
  const res = await appFetch(`${svc.url}${AUTH_BASE_PATH}/sign-in/email`, {
    method: 'POST',
    // A browser's Origin: Better Auth refuses cross-site-looking requests without one.
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ email: 'nobody@example.com', password: 'wrong-password-1' }),
  })
  t.equal(res.status, 401)
  t.match(await res.json(), { message: String, code: String })
  for (const { path, method, op } of operationsOf(doc)) {
    if (!op.responses?.['429']) t.fail(`${method} ${path} has no 429 (the global rate limit applies to it)`)
    if (!op.responses?.['500']) t.fail(`${method} ${path} has no 500`)
    if (op.requestBody && !(op.responses?.['400'] && op.responses['413'] && op.responses['415']))
      t.fail(`${method} ${path} takes a body but lists no 400/413/415`)
  }
  t.pass('every operation lists 429 and 500, and 400/413/415 where it takes a body')
  for (const [path, method, statuses] of [
    ['/get-session', 'get', ['400', '401', '403', '404', '429', '500']],
    ['/api/device/delete', 'delete', ['400', '401', '403', '404', '500']],
    ['/error', 'get', ['400', '401', '403', '404', '429', '500']],
  ] as const) {
    const listed = Object.keys(doc.paths[path]?.[method]?.responses ?? {})
    for (const status of statuses) t.ok(listed.includes(status), `${method.toUpperCase()} ${path} lists ${status}, as the interface does`)
  }
})

t.test('every operation that takes input documents its body', async (t) => {
  const upload = doc.paths['/api/upload']?.post?.requestBody as
    | { content?: Record<string, { schema?: { properties?: Record<string, { format?: string }> } }> }
    | undefined
  t.equal(upload?.content?.['multipart/form-data']?.schema?.properties?.file?.format, 'binary', 'POST /api/upload: a multipart file part')
  const put = doc.paths['/files/{path}']?.put?.requestBody as { content?: Record<string, { schema?: { format?: string } }> } | undefined
  t.equal(put?.content?.['application/octet-stream']?.schema?.format, 'binary', 'PUT /files/{path}: raw bytes')
  // Every POST, PUT and PATCH of ours documents a body, except those that take none.
  const bodyless = new Set(['POST /api/generate/{id}/cancel', 'POST /api/screens/{id}/token', 'POST /sign-out', 'POST /api/auth/sign-out'])
  for (const { path, method, op } of operationsOf(doc)) {
    if (!['post', 'put', 'patch'].includes(method) || path.startsWith(AUTH_BASE_PATH) || bodyless.has(`${method.toUpperCase()} ${path}`))
      continue
    if (!op.requestBody) t.fail(`${method.toUpperCase()} ${path} documents no request body`)
  }
})

t.test('public account operations need no session; the rest say which credential', async (t) => {
  for (const path of ['/sign-up/email', '/sign-in/email', '/sign-in/magic-link', '/request-password-reset', '/ok', '/jwks']) {
    const item = doc.paths[`${AUTH_BASE_PATH}${path}`]
    const op = item?.post ?? item?.get
    t.same(op?.security, [], `${path} is public`)
  }
  t.same(doc.paths['/sign-up/email']?.post?.security, [], 'the root copy too')
  t.same(
    doc.paths[`${AUTH_BASE_PATH}/get-session`]?.get?.security,
    [{}, { bearerAuth: [] }, { cookieAuth: [] }],
    'get-session answers with or without one',
  )
  t.same(doc.paths[`${AUTH_BASE_PATH}/change-password`]?.post?.security, [{ bearerAuth: [] }, { cookieAuth: [] }])
  t.same(
    doc.paths['/api/device']?.get?.security,
    [{ bearerAuth: [] }, { cookieAuth: [] }, { jwtAuth: [] }, { apiKeyAuth: [] }],
    'our routes also take a JWT or an API key',
  )
  t.same(doc.paths['/api/device/init']?.post?.security ?? [], [], 'a device starts pairing without an account')
})
