// Who may call a route is declared with the route and checked by one hook, before the body is
// read, parsed or validated: an anonymous request gets 401 whatever it sends, so nobody learns a
// route's schema without a credential, and a handler cannot forget the check.
//
// The declaration is the route's OpenAPI `security` (what the document tells clients is what is
// enforced), or `config: { auth }` for what the document cannot say: public routes ('none') and
// routes that check their own credential ('hook'). A route with neither fails to register.
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import type { Database } from '../db/client.js'
import { appError } from '../errors.js'
import { API_KEY_HEADER, type Auth } from './auth.js'
import { requireCaller, requirePrincipal, type Caller, type Principal } from './guard.js'

/**
 * none: anyone (the route may still look at a credential, e.g. a page that greets a signed-in user).
 * user: a session (bearer or cookie), a Better Auth JWT or an API key: requirePrincipal.
 * session: a session only (bearer or cookie): requireCaller.
 * hook: the route checks its own credential in its own onRequest hook (the broker's shared secret).
 */
export type RouteAuth = 'none' | 'user' | 'session' | 'hook'

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth
  }
  interface FastifyRequest {
    principal?: Principal
    caller?: Caller
  }
}

type Security = ReadonlyArray<Record<string, unknown>> | undefined

/** What a route's OpenAPI security requirement means here. */
function authFromSecurity(security: Security): RouteAuth | undefined {
  if (!security?.length) return undefined
  // `{}` among the alternatives: a credential is optional.
  if (security.some((s) => Object.keys(s).length === 0)) return 'none'
  const schemes = new Set(security.flatMap((s) => Object.keys(s)))
  if (schemes.has('mqttAuthSecret') || schemes.has('rabbitmqAuthSecret')) return 'hook'
  if (schemes.has('jwtAuth') || schemes.has('apiKeyAuth')) return 'user'
  return 'session'
}

/** Routes of plugins that cannot carry our config: the docs page (public by nature) and CORS preflights. */
const isPluginRoute = (route: RouteOptions, docsPath: string) =>
  route.method === 'OPTIONS' || route.url === docsPath || route.url.startsWith(`${docsPath}/`)

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Where a browser says a request came from: its Origin, else its Referer's origin (a browser may
 * leave Origin out where it sends a Referer). "null" (a sandboxed frame, a privacy redirect) names
 * no origin, unless the browser also says the request is same-origin (Sec-Fetch-Site), which Better
 * Auth takes as this service's own origin too.
 */
function requestOrigin(req: FastifyRequest, own: string): string | undefined {
  const origin = req.headers.origin
  if (origin === 'null') return req.headers['sec-fetch-site'] === 'same-origin' ? own : undefined
  if (origin) return origin
  const referer = req.headers.referer
  if (!referer) return undefined
  try {
    return new URL(referer).origin
  } catch {
    return undefined
  }
}

/**
 * A browser attaches the session cookie to cross-site requests, and a text/plain or multipart POST
 * needs no preflight: a write that carries the cookie must say it comes from an origin we trust, as
 * Better Auth requires on its own routes (a write with the cookie and neither Origin nor Referer is
 * refused there as well). Bearer tokens and API keys are not sent by browsers on their own, and a
 * page elsewhere cannot add them without a preflight that CORS refuses: a request carrying one acts
 * through it, not through the cookie.
 */
function checkCookieOrigin(req: FastifyRequest, allowed: ReadonlySet<string>, own: string) {
  if (safeMethods.has(req.method) || !req.headers.cookie) return
  if (req.headers.authorization?.startsWith('Bearer ') || req.headers[API_KEY_HEADER]) return
  const origin = requestOrigin(req, own)
  if (origin === undefined)
    throw appError(
      'FORBIDDEN_ORIGIN',
      'A write with the session cookie must carry an Origin (or Referer) header of this service or a trusted origin',
    )
  if (!allowed.has(origin)) throw appError('FORBIDDEN_ORIGIN')
}

export function installRouteAuth(
  app: FastifyInstance,
  deps: { auth: Auth; db: Database; docsPath: string; allowedOrigins: ReadonlySet<string>; ownOrigin: string },
) {
  // preParsing: after every onRequest hook (the rate limit counts anonymous requests too) and
  // before the body is read, parsed or validated.
  const check = {
    user: async (req: FastifyRequest) => {
      req.principal = await requirePrincipal(deps.auth, deps.db, req)
      checkCookieOrigin(req, deps.allowedOrigins, deps.ownOrigin)
    },
    session: async (req: FastifyRequest) => {
      req.caller = await requireCaller(deps.auth, req)
      checkCookieOrigin(req, deps.allowedOrigins, deps.ownOrigin)
    },
  }
  app.addHook('onRoute', (route) => {
    const declared = route.config?.auth ?? authFromSecurity((route.schema as { security?: Security } | undefined)?.security)
    const auth = declared ?? (isPluginRoute(route, deps.docsPath) ? 'none' : undefined)
    if (!auth)
      throw new Error(
        `${String(route.method)} ${route.url} declares no authentication: give it an OpenAPI security requirement or config.auth`,
      )
    route.config = { ...route.config, auth }
    if (auth === 'user' || auth === 'session') route.preParsing = [check[auth], ...toArray(route.preParsing)]
  })
}

const toArray = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks])

/** The caller the route's auth check resolved for a route declared 'user'. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw appError('UNAUTHORIZED')
  return req.principal
}

/** The session the route's auth check resolved for a route declared 'session'. */
export function callerOf(req: FastifyRequest): Caller {
  if (!req.caller) throw appError('UNAUTHORIZED')
  return req.caller
}
