// The HTTP listener, its public URL, and what it accepts from whom.
import { z } from 'zod'
import { isLoopbackHost } from '../production-checks.js'
import { type Section, type Values, flag, list, optionalUrl, port, variable } from './variables.js'

/**
 * Fastify `trustProxy`: false (socket address), true, or a list of addresses/CIDRs. A hop count
 * is refused: Fastify 5 accepts one but trusts no proxy with it, so the setting would do nothing.
 */
const trustProxy = z
  .string()
  .optional()
  .transform((raw, ctx): boolean | string[] => {
    const v = raw?.trim()
    if (!v || v === 'false') return false
    if (v === 'true') return true
    if (/^\d+$/.test(v)) {
      ctx.addIssue({
        code: 'custom',
        message: `a hop count (${v}) is not supported; give the proxy's address or CIDR (127.0.0.1 for a proxy on this machine), or true`,
      })
      return z.NEVER
    }
    return v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
  })

const positive = (fallback: number) => z.coerce.number().int().positive().default(fallback)

export const http = {
  title: 'HTTP',
  variables: {
    port: variable('PORT', port(3000), 'HTTP port (`0` picks a free one)'),
    host: variable(
      'HOST',
      // Loopback: a development machine serves only itself until told otherwise (docs/deployment.md).
      z.string().trim().min(1).default('127.0.0.1'),
      "HTTP listen address, and the MQTT listeners' unless `MQTT_HOST` says: loopback serves this machine only (a reverse proxy here, the simulator, a browser); `0.0.0.0` (or `::`) serves every interface, for other machines without a proxy ([deployment.md](deployment.md#which-address-to-listen-on))",
    ),
    baseUrl: variable(
      'BASE_URL',
      optionalUrl,
      "public URL used in links and as Better Auth's base URL; defaults to `http://HOST:PORT` when `HOST` is a specific non-loopback address. Required, and https, with `NODE_ENV=production`",
      { default: '`http://localhost:PORT`' },
    ),
    allowHttpBaseUrl: variable(
      'ALLOW_HTTP_BASE_URL',
      flag(false),
      '`true` lets `NODE_ENV=production` start with an `http:` `BASE_URL`: only for a network you trust (a home LAN)',
    ),
    trustProxy: variable(
      'TRUST_PROXY',
      trustProxy,
      'a comma list of proxy addresses/CIDRs (`127.0.0.1` for a reverse proxy on this machine) or `true` (any): the client is then the address the proxy forwards (`X-Forwarded-For`), for HTTP and MQTT over WebSocket alike (rate limits, connection rate, presence events); otherwise the socket address. A hop count is refused (Fastify 5 would ignore it)',
      { default: '`false`', values: '`true`, `false` or a comma list' },
    ),
    trustedOrigins: variable(
      'TRUSTED_ORIGINS',
      list,
      'browser origins allowed (CORS, Better Auth origin checks, and pages that may use the session cookie over HTTP and MQTT over WebSocket)',
      { values: 'comma list' },
    ),
    bodyLimit: variable('BODY_LIMIT', positive(1024 * 1024), 'maximum request body in bytes (413 beyond)'),
    rateLimit: {
      window: variable('RATE_LIMIT_WINDOW', positive(60), 'the general limit per client address: its window, in seconds'),
      max: variable('RATE_LIMIT_MAX', positive(200), 'the general limit per client address: requests per window'),
      authWindow: variable(
        'RATE_LIMIT_AUTH_WINDOW',
        positive(60),
        'the strict limit per address and path on sign-in, sign-up, OTP, reset, verification, password and e-mail change: its window, in seconds',
      ),
      authMax: variable('RATE_LIMIT_AUTH_MAX', positive(5), 'the strict limit: requests per window'),
    },
    demoEnabled: variable(
      'DEMO_ENABLED',
      // GET /api/demo draws and stores an image for anyone, unauthenticated (rate-limited): off for a public server.
      flag(true),
      '`false` removes `GET /api/demo` (it draws and stores an image for anyone, 20 a minute per address): set it on a public server',
    ),
  },
} satisfies Section

/**
 * The host this service is reached at when BASE_URL does not say: a wildcard or loopback HOST is
 * reached as localhost, what browsers treat as a secure context and what a passkey's relying party
 * may be (an IP address may not).
 */
export function publicHostOf(host: string): string {
  return host === '0.0.0.0' || host === '::' || isLoopbackHost(host) ? 'localhost' : host
}

export function httpSettings({ allowHttpBaseUrl: _, ...fields }: Values<typeof http.variables>) {
  const baseUrl = (fields.baseUrl ?? `http://${publicHostOf(fields.host)}:${fields.port}`).replace(/\/+$/, '')
  return {
    ...fields,
    baseUrl,
    /**
     * Origins whose pages may use the session cookie: this service's and the trusted ones, in the
     * normal form a browser's Origin header has. Cookie-authenticated HTTP writes and MQTT over
     * WebSocket both check against it.
     */
    cookieOrigins: [baseUrl, ...fields.trustedOrigins].flatMap((o) => {
      try {
        return [new URL(o).origin]
      } catch {
        return []
      }
    }),
  }
}
