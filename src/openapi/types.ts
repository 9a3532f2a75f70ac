// The parts of an OpenAPI 3.1 document this module reads and writes. Deliberately loose: the
// documents come from @fastify/swagger and Better Auth, and are checked against the official
// schema by the tests, not by these types.
export type Schema = Record<string, unknown> & { title?: string }

type MediaType = { schema?: Schema; [key: string]: unknown }

/** A response, or a `$ref` to a shared one under components.responses. */
export type Response = { description?: string; $ref?: string; content?: Record<string, MediaType>; [key: string]: unknown }

type Parameter = { name: string; in: string; [key: string]: unknown }

type SecurityRequirement = Record<string, string[]>

export type Operation = {
  tags?: string[]
  summary?: string
  description?: string
  operationId?: string
  security?: SecurityRequirement[]
  parameters?: Parameter[]
  requestBody?: { content: Record<string, MediaType>; required?: boolean; [key: string]: unknown }
  responses?: Record<string, Response>
  [key: string]: unknown
}

export type PathItem = Record<string, Operation>

export type Tag = { name: string; description?: string }

export type OpenApiDocument = {
  openapi: string
  info: { title: string; version: string; [key: string]: unknown }
  servers?: Array<{ url: string; description?: string }>
  paths: Record<string, PathItem>
  components: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, Record<string, unknown>>; [key: string]: unknown }
  tags?: Tag[]
  security?: SecurityRequirement[]
  [key: string]: unknown
}

/** HTTP methods as OpenAPI path items name them. */
export const operationMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const
