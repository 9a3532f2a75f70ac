// The service-wide parts of the OpenAPI document: security schemes, the interface's tags and
// groups, and the answers every operation can give (the global rate limit).
import { STATUS_CODES } from 'node:http'
import type { OpenApiDocument, Operation, Response, Tag } from './types.js'
import { operationMethods } from './types.js'

const errorRef = { $ref: '#/components/schemas/Error' }

/** The interface's groups: a device module, an admin API and the account-authentication group. */
const tagGroups = {
  'device module': ['device module'],
  'admin API': ['admin API'],
  'account authentication': ['default', 'admin', 'passkey', 'multi-session', 'magic-link', 'email-otp', 'organization', 'jwt', 'api-key'],
} as const

const declaredTags: Tag[] = [
  {
    name: 'device module',
    description: 'Devices and their prompts: pairing (init, validate, get-init-device), disconnect, delete, commands, events.',
  },
  {
    name: 'admin API',
    description: 'Service operations for authentication, invitations, devices, prompts, generation, notifications and uploads.',
  },
  {
    name: 'default',
    description:
      "Better Auth's core account operations (sign-up, sign-in, sessions, passwords, e-mail, linked accounts). The interface's Table C paths answer the same at the root.",
  },
  {
    name: 'admin',
    description: 'User administration (Better Auth admin plugin): roles, bans, impersonation, sessions. Needs the admin role.',
  },
  { name: 'passkey', description: 'WebAuthn passkeys: register, sign in, list, rename, delete.' },
  { name: 'multi-session', description: 'Several signed-in accounts in one client.' },
  { name: 'magic-link', description: 'Sign-in by a link sent by e-mail.' },
  { name: 'email-otp', description: 'One-time codes sent by e-mail: sign-in, verification, password reset, e-mail change.' },
  { name: 'organization', description: 'Organizations, members, roles, teams and invitations.' },
  { name: 'jwt', description: 'JSON Web Tokens for the session (GET /api/auth/token) and the key set to verify them.' },
  {
    name: 'api-key',
    description: 'API keys for scripts and integrations: create, list, update, delete. Send one as x-api-key to our routes.',
  },
  { name: 'docs', description: 'This document and its interactive page.' },
]

/** The interface's names for records whose component key is shorter. */
const recordTitles: Record<string, string> = {
  DeviceInitRecord: 'Device initialisation record',
}

/** Endpoints 1, 2 and 5 of the interface list these error statuses. */
const interfaceStatuses: Array<[string, string, number[]]> = [
  ['/get-session', 'get', [400, 401, 403, 404, 429, 500]],
  ['/api/device/delete', 'delete', [400, 401, 403, 404, 500]],
  ['/error', 'get', [400, 401, 403, 404, 429, 500]],
]

export function securitySchemes(sessionCookie: string) {
  return {
    cookieAuth: {
      type: 'apiKey',
      in: 'cookie',
      name: sessionCookie,
      description: 'Better Auth session cookie, set by sign-up and sign-in. On the docs page, sign in once and the browser sends it.',
    },
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      description:
        'Better Auth session token: the `token` field answered by sign-up and sign-in, or their `set-auth-token` response header.',
    },
    jwtAuth: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'Better Auth JWT from GET /api/auth/token, verifiable with the keys at GET /api/auth/jwks.',
    },
    apiKeyAuth: {
      type: 'apiKey',
      in: 'header',
      name: 'x-api-key',
      description:
        'An API key from POST /api/auth/api-key/create (starts with dps_): acts as its user on the device, prompt, generation, notification and upload routes.',
    },
    mqttAuthSecret: {
      type: 'http',
      scheme: 'bearer',
      description: 'MQTT_AUTH_SECRET: sent by an external MQTT broker to its HTTP auth hook.',
    },
    rabbitmqAuthSecret: {
      type: 'http',
      scheme: 'basic',
      description: "MQTT_AUTH_SECRET as the password: RabbitMQ's HTTP auth backend sends the user-info of its configured URLs.",
    },
  }
}

/** An operation's request example that register.ts could not leave in its body (a `$ref`); moved there here. */
export const BODY_EXAMPLE = 'x-body-example'

function placeBodyExamples(doc: OpenApiDocument): void {
  for (const { op } of operationsOf(doc)) {
    if (!(BODY_EXAMPLE in op)) continue
    for (const media of Object.values(op.requestBody?.content ?? {})) media.example ??= op[BODY_EXAMPLE]
    delete op[BODY_EXAMPLE]
  }
}

export function operationsOf(doc: OpenApiDocument): Array<{ path: string; method: string; op: Operation }> {
  const out: Array<{ path: string; method: string; op: Operation }> = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of operationMethods) {
      const op = item[method]
      if (op) out.push({ path, method, op })
    }
  }
  return out
}

/**
 * Adds what no single route declares: the security schemes, the declared tags (and any tag an
 * operation uses that is not declared yet), the tag groups, record titles, and the answers any
 * operation can give (429 from the global rate limit, 500, 400/413/415 where there is input).
 */
export function finishDocument(doc: OpenApiDocument, opts: { sessionCookie: string }): OpenApiDocument {
  doc.components.securitySchemes = { ...doc.components.securitySchemes, ...securitySchemes(opts.sessionCookie) }
  renameWildcards(doc)
  nonJsonMedia(doc)
  placeBodyExamples(doc)
  nameOperations(doc)

  const used = new Set<string>()
  for (const { op } of operationsOf(doc)) {
    for (const tag of op.tags ?? []) used.add(tag)
    op.responses ??= {}
    for (const [status, response] of Object.entries(op.responses)) {
      // @fastify/swagger's placeholder for a response schema without a description.
      if (response.description === 'Default Response') response.description = STATUS_CODES[status] ?? 'Response'
    }
    const error = (status: number) =>
      (op.responses![String(status)] ??= {
        description: STATUS_CODES[status]!,
        content: { 'application/json': { schema: { ...errorRef } } },
      })
    // What any operation can answer: the global rate limit, and an unexpected failure.
    error(429)
    error(500)
    // Anything that takes input can refuse it; a body can be too large or of the wrong type.
    if (op.requestBody || op.parameters?.length) error(400)
    if (op.requestBody) {
      error(413)
      error(415)
    }
  }
  // The statuses the interface lists for its own operations, whether or not we produce each one.
  for (const [path, method, statuses] of interfaceStatuses) {
    const op = doc.paths[path]?.[method]
    for (const status of statuses)
      if (op)
        op.responses![String(status)] ??= {
          description: STATUS_CODES[status]!,
          content: { 'application/json': { schema: { ...errorRef } } },
        }
  }
  shareErrorResponses(doc)
  const declared = new Set(declaredTags.map((t) => t.name))
  doc.tags = [
    ...declaredTags,
    ...[...used]
      .filter((t) => !declared.has(t))
      .sort()
      .map((name) => ({ name })),
  ]

  const grouped = new Set<string>(Object.values(tagGroups).flat())
  const rest = doc.tags.map((t) => t.name).filter((t) => !grouped.has(t))
  doc['x-tagGroups'] = [...Object.entries(tagGroups).map(([name, tags]) => ({ name, tags: [...tags] })), { name: 'service', tags: rest }]

  for (const [name, title] of Object.entries(recordTitles)) {
    const schema = doc.components.schemas?.[name]
    if (schema) schema.title = title
  }
  return doc
}

/**
 * `getDeviceByIdLogs` for GET /api/device/{id}/logs: an operationId for every operation Better Auth
 * has not named, made from its method and path, so it is stable (it changes only with the route)
 * and generated Swift and Kotlin clients get method names a person would recognise.
 */
export function operationIdFor(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((s) => s && s !== 'api')
    .map((s) => {
      const param = /^\{(.+)\}$/.exec(s)
      return param ? `By-${param[1]}` : s
    })
    .join('-')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')
}

function nameOperations(doc: OpenApiDocument): void {
  const unnamed = operationsOf(doc).filter(({ op }) => !op.operationId)
  const base = new Map<string, number>()
  for (const { path, method } of unnamed) base.set(operationIdFor(method, path), (base.get(operationIdFor(method, path)) ?? 0) + 1)
  for (const { path, method, op } of unnamed) {
    const id = operationIdFor(method, path)
    // A page and an API route of the same name (/device, /api/device): the page says it is one.
    op.operationId = (base.get(id) ?? 0) > 1 && !path.startsWith('/api/') ? `${id}Page` : id
  }
  const seen = new Map<string, string>()
  for (const { path, method, op } of operationsOf(doc)) {
    const earlier = seen.get(op.operationId!)
    if (earlier) throw new Error(`operationId ${op.operationId} of ${method.toUpperCase()} ${path} is also ${earlier}'s`)
    seen.set(op.operationId!, `${method.toUpperCase()} ${path}`)
  }
}

/**
 * A Fastify wildcard (`/files/*`) comes out of @fastify/swagger as a path parameter named `*`,
 * which client generators cannot name; it is called `path` here.
 */
export const WILDCARD_PARAM = 'path'

function renameWildcards(doc: OpenApiDocument): void {
  for (const path of Object.keys(doc.paths)) {
    if (!path.includes('{*}')) continue
    const item = doc.paths[path]!
    delete doc.paths[path]
    for (const method of operationMethods) {
      for (const param of item[method]?.parameters ?? []) {
        if (param.in === 'path' && param.name === '*') {
          param.name = WILDCARD_PARAM
          param.description ??= 'The rest of the path; may contain /'
        }
      }
    }
    doc.paths[path.replace('{*}', `{${WILDCARD_PARAM}}`)] = item
  }
}

const sharedDescriptions: Record<string, string> = {
  429: 'Too Many Requests: the Retry-After header says when to try again',
}

/** `Too Many Requests` → `TooManyRequests`. */
const responseName = (status: string) =>
  (STATUS_CODES[status] ?? `Status${status}`).replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())

/**
 * Plain error answers (the Error body, a generic description) become one shared response per
 * status, so the document and the generated client types stay readable. An error answer with
 * its own description or headers stays where it is.
 */
function shareErrorResponses(doc: OpenApiDocument): void {
  const shared: Record<string, Response> = {}
  for (const { op } of operationsOf(doc)) {
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      const generic = STATUS_CODES[status]
      if (Number(status) < 400 || !generic || response.$ref || response.headers || response.links) continue
      const description = response.description ?? ''
      // Better Auth's generic texts start with the status name: "Bad Request. Usually due to …".
      if (description !== generic && !description.startsWith(`${generic}.`)) continue
      const media = response.content
      if (!media || Object.keys(media).join() !== 'application/json' || media['application/json']?.schema?.$ref !== errorRef.$ref) continue
      const name = responseName(status)
      shared[name] ??= { description: sharedDescriptions[status] ?? generic, content: { 'application/json': { schema: { ...errorRef } } } }
      op.responses![status] = { $ref: `#/components/responses/${name}` }
    }
  }
  doc.components.responses = { ...(doc.components.responses as Record<string, Response> | undefined), ...shared }
}

/**
 * @fastify/swagger files every response schema under application/json. Two conventions of our
 * routes say otherwise: a string schema described as `text/html` is a page, and a string with
 * format `binary` is raw bytes (an image or a stored file).
 */
function nonJsonMedia(doc: OpenApiDocument): void {
  for (const { op } of operationsOf(doc)) {
    for (const response of Object.values(op.responses ?? {})) {
      const json = response.content?.['application/json']
      const schema = json?.schema as { type?: unknown; format?: unknown; description?: unknown } | undefined
      if (!json || !schema || schema.type !== 'string' || Object.keys(response.content!).length !== 1) continue
      const media = schema.description === 'text/html' ? 'text/html' : schema.format === 'binary' ? 'application/octet-stream' : undefined
      if (media) response.content = { [media]: json }
    }
  }
}
