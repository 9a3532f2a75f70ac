// The OpenAPI document and its docs page. @fastify/swagger collects routes through an onRoute
// hook, so this must be registered before any route: every route added later (by any module) is
// in the document without being listed here. Better Auth's own document is merged in.
import { readFileSync } from 'node:fs'
import { fromRoot } from '../paths.js'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifySchema, HTTPMethods } from 'fastify'
import { AUTH_BASE_PATH, type Auth } from '../auth/auth.js'
import { tableC } from '../auth/mount.js'
import { mergeBetterAuth } from './better-auth.js'
import { BODY_EXAMPLE, finishDocument, securitySchemes } from './document.js'
import type { OpenApiDocument } from './types.js'

export const OPENAPI_PATH = '/api/openapi.json'
export const DOCS_PATH = '/docs'

/** The two Better Auth 1.3 names mount.ts answers next to Table C. */
const compatForwards: Array<[HTTPMethods, string]> = [
  ['POST', '/forget-password'],
  ['POST', '/account-info'],
]

const packageVersion = (JSON.parse(readFileSync(fromRoot('package.json'), 'utf8')) as { version: string }).version

const description = `Every HTTP operation of the service: ours (device module, …) and Better Auth's (under ${AUTH_BASE_PATH}, and the interface's account paths at the root).

**Trying it from this page.** Requests go to this same server. Sign up or sign in (\`POST ${AUTH_BASE_PATH}/sign-up/email\`): the browser keeps the session cookie and sends it with every later request from this page. Or press *Authorize* and paste the \`token\` from the answer as **bearerAuth**. \`DELETE /api/device/delete\` also takes a JWT from \`GET ${AUTH_BASE_PATH}/token\` (**jwtAuth**).

Errors are \`{ "message": string, "code": "UPPER_SNAKE" }\`.`

const html = (summary: string, extra: FastifySchema = {}): FastifySchema => ({
  tags: ['docs'],
  summary,
  ...extra,
  response: { 200: { description: 'text/html', content: { 'text/html': { schema: { type: 'string' } } } } },
})

/** The docs page's own routes are hidden by @fastify/swagger-ui; these are worth listing. */
const docsRouteSchemas: Record<string, FastifySchema> = {
  [DOCS_PATH]: html('Interactive documentation of this API (Swagger UI), served from this service with no outside assets'),
  [`${DOCS_PATH}/json`]: {
    tags: ['docs'],
    summary: 'This document, as the docs page loads it',
    response: { 200: { description: 'OpenAPI 3.1 document', type: 'object', additionalProperties: true } },
  },
  [`${DOCS_PATH}/yaml`]: {
    tags: ['docs'],
    summary: 'This document in YAML',
    response: { 200: { description: 'OpenAPI 3.1 document', content: { 'application/x-yaml': { schema: { type: 'string' } } } } },
  },
}

/**
 * @fastify/swagger drops every keyword beside a `$ref`, so the examples of a body that is a shared
 * schema (`SharedRef(schema, { examples })`) travel beside the body; finishDocument puts the first
 * one in the request body.
 */
function withBodyExample(schema: FastifySchema): FastifySchema {
  const body = schema.body as { $ref?: string; examples?: unknown[] } | undefined
  if (!body?.$ref || !Array.isArray(body.examples)) return schema
  const { examples, ...ref } = body
  return { ...schema, body: ref, [BODY_EXAMPLE]: examples[0] } as FastifySchema
}

export async function registerOpenApi(app: FastifyInstance, opts: { auth: Auth }) {
  const { auth } = opts
  const betterAuthDoc = (await auth.api.generateOpenAPISchema()) as unknown as OpenApiDocument
  const sessionCookie = (await auth.$context).authCookies.sessionToken.name

  // Routes that forward to Better Auth carry no schema of their own; Better Auth's document
  // describes them, so the generated entries are replaced by its operations.
  const forwarded = new Set([...tableC, ...compatForwards].map(([method, path]) => `${method} ${path}`))
  const isForward = (url: string, method: string | string[]) =>
    url === `${AUTH_BASE_PATH}/*` || [method].flat().every((m) => forwarded.has(`${m} ${url}`))

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Display Pairing Service API', version: packageVersion, description },
      servers: [{ url: '/', description: 'This service (the origin serving this document)' }],
      // Needed up front: @fastify/swagger reads them while it turns each route's security into parameters.
      components: { securitySchemes: securitySchemes(sessionCookie) as never },
    },
    refResolver: {
      // Shared schemas keep their $id as the component name: the interface's record names.
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform: ({ schema, url, route }) => {
      if (isForward(url, route.method)) return { schema: { ...schema, hide: true }, url }
      // Fastify registers the page as /docs and /docs/ from one route object, which ends up holding
      // the second URL; the document lists the first.
      const page = url === `${DOCS_PATH}/` ? DOCS_PATH : url
      const docs = docsRouteSchemas[page]
      if (docs) return { schema: docs, url: page }
      // A body Fastify does not parse into req.body (multipart, raw bytes) is declared for the
      // document only, under 'x-body', so validation does not run against it.
      const { 'x-body': documented, ...rest } = schema as FastifySchema & { 'x-body'?: unknown }
      return { schema: withBodyExample(documented ? { ...rest, body: documented } : schema), url }
    },
    transformObject: (generated) =>
      finishDocument(
        mergeBetterAuth((generated as { openapiObject: unknown }).openapiObject as OpenApiDocument, betterAuthDoc, {
          basePath: AUTH_BASE_PATH,
          rootForwards: tableC.map(([method, path]) => ({ method, path })),
        }),
        { sessionCookie },
      ) as never,
  })

  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    theme: { title: 'Display Pairing Service API' },
    uiConfig: {
      deepLinking: true,
      docExpansion: 'none',
      filter: true,
      displayRequestDuration: true,
      persistAuthorization: true,
      tryItOutEnabled: true,
    },
  })

  let documentJson: string | undefined
  app.get(
    OPENAPI_PATH,
    {
      config: { auth: 'none' },
      schema: {
        tags: ['docs'],
        summary: 'This OpenAPI 3.1 document',
        description:
          'Generated from the route schemas and merged with Better Auth’s document. Feed it to a client generator (see clients/ in the repository).',
        response: { 200: { description: 'OpenAPI 3.1 document', type: 'object', additionalProperties: true } },
      },
    },
    async (_req, reply) => {
      // Routes are fixed once the app is ready, so the document is built once.
      documentJson ??= JSON.stringify(app.swagger())
      return reply.type('application/json; charset=utf-8').send(documentJson)
    },
  )
}
