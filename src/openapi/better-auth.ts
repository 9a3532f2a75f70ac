// Better Auth describes its own endpoints (its openAPI plugin). We fold that description into the
// document generated from our route schemas, so one file covers every operation of the service.
// Its paths are relative to /api/auth, two of its record names (User, Session) are already the
// interface's snake_case records, and its error bodies are the bare {message} our mount rewrites
// to {message, code}; all of that is adjusted here.
import type { HTTPMethods } from 'fastify'
import { betterAuthExamples } from './better-auth-examples.js'
import { exampleIds } from './examples.js'
import type { OpenApiDocument, Operation, PathItem, Response, Schema } from './types.js'

/** A root path answered by forwarding to a Better Auth endpoint (see src/auth/mount.ts). */
type RootForward = { method: HTTPMethods; path: string }

export type BetterAuthMergeOptions = {
  /** Where Better Auth is mounted, e.g. /api/auth. */
  basePath: string
  /** Table C: root paths forwarded to the Better Auth endpoint of the same path and method. */
  rootForwards: ReadonlyArray<RootForward>
}

const errorRef = { $ref: '#/components/schemas/Error' }
const schemaRef = (name: string) => `#/components/schemas/${name}`

/** Fastify's `/reset-password/:token` is OpenAPI's `/reset-password/{token}`. */
const toOpenApiPath = (fastifyPath: string) => fastifyPath.replace(/:(\w+)/g, '{$1}')

const clone = <T>(value: T): T => structuredClone(value)

function visit(node: unknown, fn: (obj: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) visit(item, fn)
  } else if (node && typeof node === 'object') {
    fn(node as Record<string, unknown>)
    for (const value of Object.values(node)) visit(value, fn)
  }
}

/** OpenAPI 3.0's `nullable` is not a 3.1 keyword; 3.1 says the same with a type list. */
function nullableToTypeList(doc: unknown): void {
  visit(doc, (obj) => {
    if (obj.nullable !== true) return
    delete obj.nullable
    if (typeof obj.type === 'string') obj.type = [obj.type, 'null']
    else if (Array.isArray(obj.type) && !obj.type.includes('null')) obj.type = [...obj.type, 'null']
  })
}

function renameRefs(doc: unknown, renames: Map<string, string>): void {
  if (renames.size === 0) return
  visit(doc, (obj) => {
    if (typeof obj.$ref !== 'string') return
    const name = obj.$ref.startsWith(schemaRef('')) ? obj.$ref.slice(schemaRef('').length) : undefined
    const renamed = name && renames.get(name)
    if (renamed) obj.$ref = schemaRef(renamed)
  })
}

/** The interface names its account-authentication groups in lower case: default, email-otp, … */
const tagName = (tag: string) => tag.toLowerCase()

/**
 * Better Auth marks nearly every operation as needing a session; these are for people who do not
 * have one yet (or prove themselves with a code, link or token instead).
 */
const PUBLIC_PATHS = new Set([
  '/sign-up/email',
  '/sign-in/email',
  '/sign-in/social',
  '/sign-in/magic-link',
  '/magic-link/verify',
  '/sign-in/email-otp',
  '/email-otp/send-verification-otp',
  '/email-otp/check-verification-otp',
  '/email-otp/verify-email',
  '/email-otp/reset-password',
  '/email-otp/request-password-reset',
  '/forget-password/email-otp',
  '/request-password-reset',
  '/reset-password',
  '/reset-password/{token}',
  '/verify-email',
  '/send-verification-email',
  '/callback/{id}',
  '/passkey/generate-authenticate-options',
  '/passkey/verify-authentication',
  '/ok',
  '/error',
  '/jwks',
])
/** Answered with or without a session (null, or an empty list, without one). */
const OPTIONAL_SESSION_PATHS = new Set(['/get-session', '/multi-session/list-device-sessions'])

function adaptOperation(path: string, op: Operation): Operation {
  op.tags = (op.tags ?? ['default']).map(tagName)
  // Better Auth marks each operation with a bearer session token; a session cookie works the same.
  if (op.security?.some((req) => 'bearerAuth' in req || 'apiKeyCookie' in req)) {
    op.security = [{ bearerAuth: [] }, { cookieAuth: [] }]
  }
  if (PUBLIC_PATHS.has(path)) op.security = []
  else if (OPTIONAL_SESSION_PATHS.has(path)) op.security = [{}, { bearerAuth: [] }, { cookieAuth: [] }]
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if (Number(status) < 400 || !response.content?.['application/json']) continue
    // Our mount rewrites every Better Auth error to the service's error body.
    response.content['application/json'] = { schema: { ...errorRef } }
  }
  return op
}

/** A few Better Auth operations document only their errors; their success answer is still there. */
function addMissingSuccess(path: string, op: Operation) {
  const responses = (op.responses ??= {})
  if (Object.keys(responses).some((status) => /^[23]/.test(status))) return
  const success: Record<string, Response> =
    path === '/callback/{id}'
      ? { 302: { description: 'Redirect to the callbackURL given at sign-in (or its errorCallbackURL)' } }
      : {
          200: {
            description: "Success: Better Auth's JSON answer (its document does not describe the body)",
            content: { 'application/json': { schema: {} } },
          },
        }
  op.responses = { ...success, ...responses }
}

/**
 * A request example this service accepts as it is (better-auth-examples.ts). Better Auth's own
 * field examples name callback URLs on another site, which the service refuses: they become a
 * path of the service.
 */
function addExample(path: string, op: Operation) {
  const media = op.requestBody?.content['application/json']
  if (!media) return
  visit(media.schema, (obj) => {
    if (typeof obj.example === 'string' && /^https?:\/\//.test(obj.example)) obj.example = '/'
  })
  if (path in betterAuthExamples) media.example = clone(betterAuthExamples[path])
}

/**
 * The operation Better Auth documents for `method path`, copied so it can be served at the root.
 * The copy gets its own operationId (ids are unique across a document).
 */
function rootCopy(ba: OpenApiDocument, method: string, path: string, rootPath: string): Operation {
  const source = ba.paths[path]?.[method.toLowerCase()]
  const op: Operation = source
    ? clone(source)
    : { description: `Forwarded to Better Auth's ${method} ${path}.`, responses: { 200: { description: 'Better Auth answer' } } }
  op.tags = ['default']
  if (op.operationId) op.operationId = `${op.operationId}AtRoot`
  op.description = `${op.description ? `${op.description}. ` : ''}Same operation as ${method} /api/auth${path}, answered at ${rootPath}.`
  return op
}

/**
 * POST /account-info is Better Auth 1.3's shape of today's GET /account-info: the account id
 * travels in a JSON body instead of the query string.
 */
function accountInfoCompat(ba: OpenApiDocument): Operation {
  const op = rootCopy(ba, 'GET', '/account-info', '/account-info')
  op.operationId = 'accountInfoCompat'
  op.summary = 'Account info from the provider (Better Auth 1.3 form)'
  op.parameters = (op.parameters ?? []).filter((p) => p.name !== 'accountId')
  op.requestBody = {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['accountId'],
          properties: { accountId: { type: 'string', description: "Better Auth's account id: an `id` from GET /list-accounts" } },
        },
        example: { accountId: exampleIds.accountId },
      },
    },
  }
  op.responses = {
    ...op.responses,
    400: { description: 'accountId is missing', content: { 'application/json': { schema: { ...errorRef } } } },
  }
  return op
}

function forgetPasswordCompat(ba: OpenApiDocument): Operation {
  const op = rootCopy(ba, 'POST', '/request-password-reset', '/forget-password')
  op.operationId = 'forgetPasswordCompat'
  op.summary = 'Request a password reset e-mail (Better Auth 1.3 name of /request-password-reset)'
  return op
}

const generateSchemaOperation = (basePath: string): Operation => ({
  tags: ['default'],
  operationId: 'betterAuthOpenApiDocument',
  summary: "Better Auth's own OpenAPI document",
  description: `Paths relative to ${basePath}. GET /api/openapi.json is the document of the whole service.`,
  responses: { 200: { description: 'OpenAPI document', content: { 'application/json': { schema: { type: 'object' } } } } },
})

/**
 * Operations Better Auth documents that always refuse in this service's configuration: a client
 * generated from the document would offer calls that cannot work. POST /get-session needs
 * session.deferSessionRefresh (GET /get-session is the operation); /update-session has no session
 * field that takes input here; e-mail change by one-time code is off (POST /change-email with a
 * link is the way).
 */
export const OFF_HERE: ReadonlySet<string> = new Set([
  'POST /get-session',
  'POST /update-session',
  'POST /email-otp/request-email-change',
  'POST /email-otp/change-email',
])

function addOperation(doc: OpenApiDocument, path: string, method: string, op: Operation) {
  const item: PathItem = (doc.paths[path] ??= {})
  if (item[method]) throw new Error(`OpenAPI merge: ${method.toUpperCase()} ${path} is documented twice`)
  item[method] = op
}

/**
 * Merges Better Auth's document into ours: its paths under `basePath`, Table C's root forwards,
 * the two Better Auth 1.3 compatibility routes, and its component schemas (a name we already use
 * is kept for our record; Better Auth's gets an `Auth` prefix).
 */
/**
 * Better Auth's operations that need a session, as this service's document describes them:
 * "METHOD /path" relative to its base path. The mount answers an anonymous request to one of
 * them with 401 before Better Auth reads (and validates) its body.
 */
export function sessionOperations(betterAuth: OpenApiDocument): Set<string> {
  const out = new Set<string>()
  for (const [path, item] of Object.entries(betterAuth.paths ?? {})) {
    for (const [method, op] of Object.entries(item as Record<string, Operation>)) {
      if (!op || typeof op !== 'object' || !('responses' in op)) continue
      const security = adaptOperation(path, clone(op)).security
      if (security?.length && !security.some((req) => Object.keys(req).length === 0)) out.add(`${method.toUpperCase()} ${path}`)
    }
  }
  return out
}

export function mergeBetterAuth(ours: OpenApiDocument, betterAuth: OpenApiDocument, opts: BetterAuthMergeOptions): OpenApiDocument {
  const ba = clone(betterAuth)
  nullableToTypeList(ba)

  const renames = new Map<string, string>()
  const ourSchemas = (ours.components.schemas ??= {})
  for (const name of Object.keys(ba.components?.schemas ?? {})) {
    if (name in ourSchemas) renames.set(name, `Auth${name}`)
  }
  renameRefs(ba, renames)
  for (const [name, schema] of Object.entries(ba.components?.schemas ?? {})) {
    const target = renames.get(name) ?? name
    ourSchemas[target] = { ...(schema as Schema), title: (schema as Schema).title ?? `${name} (Better Auth)` }
  }

  for (const [path, item] of Object.entries(ba.paths)) {
    for (const op of Object.values(item)) {
      adaptOperation(path, op)
      addMissingSuccess(path, op)
      addExample(path, op)
    }
  }

  for (const [path, item] of Object.entries(ba.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!OFF_HERE.has(`${method.toUpperCase()} ${path}`)) addOperation(ours, `${opts.basePath}${path}`, method, op)
    }
  }
  addOperation(ours, `${opts.basePath}/open-api/generate-schema`, 'get', generateSchemaOperation(opts.basePath))

  for (const { method, path } of opts.rootForwards) {
    const openApiPath = toOpenApiPath(path)
    addOperation(ours, openApiPath, method.toLowerCase(), rootCopy(ba, method, openApiPath, openApiPath))
  }
  addOperation(ours, '/forget-password', 'post', forgetPasswordCompat(ba))
  addOperation(ours, '/account-info', 'post', accountInfoCompat(ba))
  return ours
}
