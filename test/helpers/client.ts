// The official Better Auth client, as a companion app would use it, with a cookie jar so
// cookie-based flows (multi-session) work in Node the way they do in a browser. By inject when
// the URL is an app of this process.
import { createAuthClient } from 'better-auth/client'
import { adminClient, emailOTPClient, jwtClient, magicLinkClient, multiSessionClient, organizationClient } from 'better-auth/client/plugins'
import { passkeyClient } from '@better-auth/passkey/client'
import { apiKeyClient } from '@better-auth/api-key/client'
import { appFetch } from './app-fetch.js'

export class CookieJar {
  private readonly cookies = new Map<string, string>()
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }
  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === ''
      if (expired) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }
  clear(): void {
    this.cookies.clear()
  }
  get size(): number {
    return this.cookies.size
  }
}

/** `socket`: over a real socket even when `url` is an app of this process (test/helpers/app-fetch.ts). */
export function makeClient(url: string, opts: { jar?: CookieJar; socket?: boolean } = {}) {
  const jar = opts.jar ?? new CookieJar()
  const fetchWithJar = async (input: RequestInfo | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers)
    if (jar.size) headers.set('cookie', jar.header())
    // What a browser would send; Better Auth checks it on cookie-authenticated writes.
    headers.set('origin', url)
    const res = await (opts.socket ? fetch : appFetch)(input, { ...init, headers, redirect: 'manual' })
    jar.store(res)
    return res
  }
  const client = createAuthClient({
    baseURL: `${url}/api/auth`,
    fetchOptions: { customFetchImpl: fetchWithJar as typeof fetch },
    plugins: [
      adminClient(),
      organizationClient({ teams: { enabled: true } }),
      multiSessionClient(),
      magicLinkClient(),
      emailOTPClient(),
      passkeyClient(),
      jwtClient(),
      apiKeyClient(),
    ],
  })
  return { client, jar }
}

export type Client = ReturnType<typeof makeClient>['client']

/** Signs up a fresh account through the client; returns its session token and user id. */
export async function signUp(client: Client, email: string, password = 'correct-horse-battery', name = 'Test User') {
  const res = await client.signUp.email({ email, password, name })
  if (res.error) throw new Error(`sign-up failed: ${res.error.message}`)
  return { token: res.data!.token as string, userId: res.data!.user.id }
}

let counter = 0
export function uniqueEmail(prefix = 'user'): string {
  counter += 1
  return `${prefix}-${Date.now().toString(36)}-${counter}@example.com`
}
