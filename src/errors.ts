// Every error body the service sends is { message, code }. Routes throw AppError; everything
// else is mapped here so nothing leaks a stack trace.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ERRORS, type ErrorCode } from './error-codes.js'

export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'AppError'
  }
}

/** An AppError for a catalogued code; `message` replaces the default when it carries details. */
export function appError(code: ErrorCode, message: string = ERRORS[code].message, headers: Record<string, string> = {}): AppError {
  return new AppError(ERRORS[code].status, code, message, headers)
}

export const errorBodySchema = {
  $id: 'Error',
  type: 'object',
  required: ['message', 'code'],
  properties: {
    message: { type: 'string' },
    code: { type: 'string', description: 'UPPER_SNAKE machine-readable code' },
  },
} as const

const statusCodes: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  402: 'PAYMENT_REQUIRED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  410: 'GONE',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_ENTITY',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_ERROR',
  503: 'SERVICE_UNAVAILABLE',
}

export function codeForStatus(status: number): string {
  return statusCodes[status] ?? (status >= 500 ? 'INTERNAL_ERROR' : 'BAD_REQUEST')
}

const fastifyCodes: Record<string, [number, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'PAYLOAD_TOO_LARGE'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'UNSUPPORTED_MEDIA_TYPE'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'EMPTY_JSON_BODY'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'INVALID_JSON'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'INVALID_CONTENT_LENGTH'],
}

/**
 * PostgreSQL's data exceptions (SQLSTATE class 22: bad date, invalid text, out of range) and
 * 54000 (a value too large to index) come from values a request carried, not from the server.
 * drizzle wraps the driver's error, so the code may sit on its cause.
 */
function sqlState(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } }
  const code = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : e.cause?.code
  return typeof code === 'string' ? code : undefined
}

function isRefusedValue(err: unknown): boolean {
  const code = sqlState(err)
  return code !== undefined && (code.startsWith('22') || code === '54000')
}

/**
 * 23503: a row refers to one deleted between the request's checks and its write (a device removed
 * while a prompt for it is stored). The foreign key keeps the data whole; the caller may retry.
 */
const isGoneReference = (err: unknown) => sqlState(err) === '23503'

/** Fastify's message, and for a value outside a list the list itself: "must be equal to one of the allowed values" alone leaves the caller guessing. */
function validationMessage(err: FastifyError): string {
  const allowed = err.validation?.find((v) => v.keyword === 'enum')?.params?.allowedValues
  return Array.isArray(allowed) ? `${err.message}: ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : err.message
}

/** Answers a request no route matched, or returns false to let it be a 404 (the console's deep links). */
export type NotFoundFallback = (req: FastifyRequest, reply: FastifyReply) => Promise<boolean>

export function installErrorHandling(app: FastifyInstance): { setNotFoundFallback(fallback: NotFoundFallback): void } {
  let fallback: NotFoundFallback | undefined
  app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) {
      return reply.code(err.statusCode).headers(err.headers).send({ message: err.message, code: err.code })
    }
    if (err.validation) {
      return reply.code(400).send({ message: validationMessage(err), code: 'VALIDATION_ERROR' })
    }
    const mapped = err.code ? fastifyCodes[err.code] : undefined
    if (mapped) return reply.code(mapped[0]).send({ message: err.message, code: mapped[1] })
    if (err instanceof SyntaxError)
      return reply.code(ERRORS.INVALID_JSON.status).send({ message: ERRORS.INVALID_JSON.message, code: 'INVALID_JSON' })
    if (isRefusedValue(err)) {
      // Validation should have caught it; the log says where it did not.
      req.log.warn({ err }, 'the database refused a value from the request')
      return reply.code(ERRORS.INVALID_VALUE.status).send({ message: ERRORS.INVALID_VALUE.message, code: 'INVALID_VALUE' })
    }
    if (isGoneReference(err))
      return reply.code(ERRORS.REFERENCE_GONE.status).send({ message: ERRORS.REFERENCE_GONE.message, code: 'REFERENCE_GONE' })
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500
    if (status >= 500) {
      req.log.error({ err }, 'request failed')
      return reply.code(status).send({ message: ERRORS.INTERNAL_ERROR.message, code: 'INTERNAL_ERROR' })
    }
    return reply.code(status).send({ message: err.message, code: codeForStatus(status) })
  })
  app.setNotFoundHandler(async (req, reply) => {
    if (fallback && (await fallback(req, reply))) return reply
    return reply.code(404).send({ message: `Route ${req.method} ${req.url.split('?')[0]} not found`, code: 'NOT_FOUND' })
  })
  return {
    setNotFoundFallback(f) {
      fallback = f
    },
  }
}
