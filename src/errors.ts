// Every error body the service sends is { message, code }. Routes throw AppError; everything
// else is mapped here so nothing leaks a stack trace.
import type { IncomingMessage } from 'node:http'
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
  507: 'STORAGE_FULL',
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

/**
 * The disk (or quota) is full: PostgreSQL's disk_full (53100, also what PGlite raises when its
 * data folder cannot grow) or ENOSPC/EDQUOT from the file system (the object store, the mail
 * outbox), anywhere in the chain of causes. Nothing the request wanted was stored (each write is
 * one transaction), and the client may try again later: 507, not an internal error.
 */
function isStorageFull(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === '53100' || e.code === 'ENOSPC' || e.code === 'EDQUOT') return true
  }
  return false
}

/** Fastify's message, and for a value outside a list the list itself: "must be equal to one of the allowed values" alone leaves the caller guessing. */
function validationMessage(err: FastifyError): string {
  const allowed = err.validation?.find((v) => v.keyword === 'enum')?.params?.allowedValues
  return Array.isArray(allowed) ? `${err.message}: ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : err.message
}

/** How much of a refused body is read (and thrown away) before the answer, at most: see discardBody. */
const DISCARD_MAX_BYTES = 64 * 1024 * 1024
const DISCARD_MAX_MS = 30_000

/**
 * Reads what is left of a request body and throws it away, up to a bound. Fastify answers a body
 * over its limit at once and closes the connection after the answer (the client may still be
 * sending); a client still writing then got EPIPE and never read the 413 (Node's fetch, mobile
 * HTTP stacks). Once the body is in, the client is reading, and the answer reaches it; past the
 * bound the answer goes out anyway.
 */
export function discardBody(raw: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    // `complete` is the HTTP parser's word that the body is in; `readableEnded` says the same of
    // any stream already read to its end (light-my-request's, which never sets `complete`, so
    // an injected request over the limit used to wait the whole bound for an 'end' already gone).
    if (raw.complete || raw.readableEnded || raw.destroyed) return resolve()
    let seen = 0
    const done = () => {
      clearTimeout(timer)
      raw.off('data', onData)
      raw.off('end', done)
      raw.off('error', done)
      raw.off('close', done)
      resolve()
    }
    const onData = (chunk: Buffer) => {
      seen += chunk.length
      if (seen > DISCARD_MAX_BYTES) done()
    }
    const timer = setTimeout(done, DISCARD_MAX_MS)
    raw.on('data', onData)
    raw.once('end', done)
    raw.once('error', done)
    raw.once('close', done)
    raw.resume()
  })
}

/** Answers a request no route matched, or returns false to let it be a 404 (the console's deep links). */
export type NotFoundFallback = (req: FastifyRequest, reply: FastifyReply) => Promise<boolean>

export function installErrorHandling(app: FastifyInstance): { setNotFoundFallback(fallback: NotFoundFallback): void } {
  let fallback: NotFoundFallback | undefined
  app.setErrorHandler(async (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    if (err.statusCode === 413 || (err instanceof AppError && err.statusCode === 413)) await discardBody(req.raw)
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
    if (isStorageFull(err)) {
      req.log.error({ err }, 'out of storage space')
      return reply.code(ERRORS.STORAGE_FULL.status).send({ message: ERRORS.STORAGE_FULL.message, code: 'STORAGE_FULL' })
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
