// Mounts Better Auth's handler at /api/auth/* and the interface's Table C paths at the root.
// The raw request body is forwarded untouched (Fastify's JSON parser would reject empty JSON
// bodies and form-encoded OAuth callbacks), from an encapsulated plugin so the rest of the app
// keeps Fastify's normal parsers.
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import { appError, codeForStatus } from '../errors.js'
import { sessionOperations } from '../openapi/better-auth.js'
import type { OpenApiDocument } from '../openapi/types.js'
import { findCaller } from './guard.js'
import { hasNulCharacter, MAX_JSON_DEPTH, nestingDepth, nulError, tooDeepError } from '../http/validation.js'
import { AUTH_BASE_PATH, CLIENT_IP_HEADER, type Auth } from './auth.js'
import { leavesSessionsUnchanged } from './session-cache.js'
import { bareSessionToken } from './signed-token.js'

type Forward = { path: string; method?: string; body?: Buffer }

const methods: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/** Table C: the account operations the interface lists at the root, each forwarded to Better Auth. */
export const tableC: Array<[HTTPMethods, string]> = [
  ['POST', '/sign-out'],
  ['POST', '/sign-up/email'],
  ['POST', '/sign-in/email'],
  ['POST', '/reset-password'],
  ['GET', '/verify-email'],
  ['POST', '/send-verification-email'],
  ['POST', '/change-email'],
  ['POST', '/change-password'],
  ['POST', '/update-user'],
  ['POST', '/delete-user'],
  ['GET', '/reset-password/:token'],
  ['POST', '/request-password-reset'],
  ['GET', '/list-sessions'],
  ['POST', '/revoke-session'],
  ['POST', '/revoke-sessions'],
  ['POST', '/revoke-other-sessions'],
  ['POST', '/link-social'],
  ['GET', '/list-accounts'],
  ['GET', '/delete-user/callback'],
  ['POST', '/unlink-account'],
  ['POST', '/refresh-token'],
  ['POST', '/get-access-token'],
  ['GET', '/ok'],
]

const clientFaultCodes = new Set(['FAILED_TO_VERIFY_REGISTRATION', 'FAILED_TO_VERIFY_AUTHENTICATION', 'AUTHENTICATION_FAILED'])

const hopByHop = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', CLIENT_IP_HEADER])

function isJson(req: FastifyRequest) {
  return /^application\/([\w.+-]*\+)?json/i.test(req.headers['content-type'] ?? '')
}

export async function mountAuth(
  app: FastifyInstance,
  opts: { auth: Auth; baseUrl: string; secret: string; bodyLimit: number; onAccountChange?: () => Promise<void> },
) {
  const { auth, baseUrl } = opts

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.bodyLimit }, (req, body, done) => {
    const raw = body as Buffer
    // Better Auth would answer malformed JSON with a 500; refuse it here with a clear 400.
    if (raw.length > 0 && isJson(req)) {
      const text = raw.toString('utf8')
      if (nestingDepth(text) > MAX_JSON_DEPTH) return done(tooDeepError())
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch {
        return done(Object.assign(new Error('Malformed JSON body'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }))
      }
      if (hasNulCharacter(value)) return done(nulError())
    } else if (raw.includes('%00') || raw.includes(0)) {
      // Form posts (OAuth callbacks) carry their values URL-encoded.
      return done(nulError())
    }
    done(null, raw)
  })

  // Better Auth validates a body before it looks at the session: an anonymous request to an
  // operation that needs one is refused here first, whatever it sends.
  const needsSession = sessionOperations((await auth.api.generateOpenAPISchema()) as unknown as OpenApiDocument)
  const refuseAnonymous = async (req: FastifyRequest, path: string, method = req.method) => {
    if (!needsSession.has(`${method} ${path.split('?')[0]}`)) return
    if (!(await findCaller(auth, req))) throw appError('UNAUTHORIZED')
  }

  async function forward(req: FastifyRequest, reply: FastifyReply, target: Forward) {
    const method = target.method ?? req.method
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || hopByHop.has(name)) continue
      if (Array.isArray(value)) for (const v of value) headers.append(name, v)
      else headers.set(name, value)
    }
    headers.set(CLIENT_IP_HEADER, req.ip)
    let body: Buffer | undefined = target.body ?? (Buffer.isBuffer(req.body) ? req.body : undefined)
    if (method === 'GET' || method === 'HEAD') body = undefined
    // Better Auth reads JSON bodies; an empty one (sign-out from some clients) is an empty object.
    if (body && body.length === 0 && isJson(req)) body = Buffer.from('{}')
    if (body === undefined && method === 'POST' && !req.headers['content-type']) {
      body = Buffer.from('{}')
      headers.set('content-type', 'application/json')
    }
    if (target.path.split('?')[0] === '/revoke-session' && body && isJson(req)) body = withBareToken(body)
    const url = new URL(AUTH_BASE_PATH + target.path, baseUrl)
    const res = await auth.handler(new Request(url, { method, headers, body: body ? new Uint8Array(body) : undefined }))
    // Sessions, users, roles or bans may have changed: cached sessions go before anyone sees the answer.
    if (res.status < 400 && !leavesSessionsUnchanged(target.path)) await opts.onAccountChange?.()
    return sendResponse(reply, res)
  }

  /** revoke-session looks the token up as stored: the signed form is reduced to it, or refused. */
  function withBareToken(body: Buffer): Buffer {
    const parsed = JSON.parse(body.toString('utf8')) as { token?: unknown }
    if (typeof parsed?.token !== 'string') return body
    const token = bareSessionToken(parsed.token, opts.secret)
    // A percent-encoded NUL (`%00`) survives the body's NUL check and decodes to a character the
    // database refuses: no session token holds one.
    if (token === null || token.includes('\u0000')) throw appError('INVALID_TOKEN')
    return Buffer.from(JSON.stringify({ ...parsed, token }))
  }

  async function sendResponse(reply: FastifyReply, res: Response) {
    reply.code(res.status)
    res.headers.forEach((value, name) => {
      if (name === 'set-cookie' || name === 'content-length' || name === 'content-encoding') return
      reply.header(name, value)
    })
    const cookies = res.headers.getSetCookie()
    if (cookies.length) reply.header('set-cookie', cookies)
    const payload = Buffer.from(await res.arrayBuffer())
    if (res.status < 400) return reply.send(payload)
    return reply.send(normaliseError(reply, res, payload))
  }

  function normaliseError(reply: FastifyReply, res: Response, payload: Buffer) {
    let parsed: { message?: unknown; code?: unknown } = {}
    try {
      parsed = payload.length ? JSON.parse(payload.toString('utf8')) : {}
    } catch {
      parsed = {}
    }
    if (res.status === 429) {
      const retry = res.headers.get('x-retry-after')
      if (retry) reply.header('retry-after', retry)
    }
    const message = typeof parsed.message === 'string' && parsed.message ? parsed.message : res.statusText || 'Request failed'
    const code = typeof parsed.code === 'string' && parsed.code ? parsed.code : codeForStatus(res.status)
    // Better Auth answers some refusals of client input with a 500 (a WebAuthn response that does
    // not verify); they are the client's fault, so they are a 400 here.
    if (res.status === 500 && clientFaultCodes.has(code)) reply.code(400)
    reply.header('content-type', 'application/json; charset=utf-8')
    return JSON.stringify({ ...parsed, message, code })
  }

  const suffix = (req: FastifyRequest) => {
    const url = req.raw.url ?? '/'
    return url.slice(url.indexOf(AUTH_BASE_PATH) + AUTH_BASE_PATH.length) || '/'
  }

  // The interface's pass-through: every Better Auth endpoint under /api/auth.
  app.route({
    method: methods,
    url: `${AUTH_BASE_PATH}/*`,
    // Better Auth checks its own credentials; an anonymous request is refused before its body is read.
    config: { auth: 'none' },
    preParsing: async (req) => refuseAnonymous(req, suffix(req)),
    handler: (req, reply) => forward(req, reply, { path: suffix(req) }),
  })

  for (const [method, path] of tableC) {
    app.route({
      method,
      url: path,
      config: { auth: 'none' },
      preParsing: async (req) => refuseAnonymous(req, path.replace(/:(\w+)/g, '{$1}')),
      handler: (req, reply) => forward(req, reply, { path: req.raw.url ?? path }),
    })
  }

  // Better Auth 1.3's names, still part of the interface.
  app.post('/forget-password', { config: { auth: 'none' } }, (req, reply) => forward(req, reply, { path: '/request-password-reset' }))
  app.post(
    '/account-info',
    { config: { auth: 'none' }, preParsing: async (req) => refuseAnonymous(req, '/account-info', 'GET') },
    (req, reply) => {
      let accountId = ''
      try {
        const parsed = JSON.parse((req.body as Buffer | undefined)?.toString('utf8') || '{}')
        accountId = typeof parsed.accountId === 'string' ? parsed.accountId : ''
      } catch {
        accountId = ''
      }
      // A lone surrogate cannot be URI-encoded (encodeURIComponent throws): no account has such an id.
      if (!accountId || /[\uD800-\uDFFF]/u.test(accountId))
        return reply.code(400).send({ message: 'accountId is required (a well-formed string)', code: 'VALIDATION_ERROR' })
      return forward(req, reply, { path: `/account-info?accountId=${encodeURIComponent(accountId)}`, method: 'GET' })
    },
  )
}
