// The official Better Auth React client with the plugins the server runs. The session is the
// httpOnly cookie Better Auth sets; nothing about it is kept in script-readable storage. The
// passkey and API key plugins (a third of the client's size, WebAuthn's browser library most of
// it) are in auth-extras.ts, loaded only with the screens that use them.
import { adminClient, emailOTPClient, magicLinkClient, multiSessionClient, organizationClient } from 'better-auth/client/plugins'
import { createAuthClient } from 'better-auth/react'
import { useNavigate } from 'react-router'

export const baseURL = `${window.location.origin}/api/auth`

export const authClient = createAuthClient({
  baseURL,
  plugins: [organizationClient({ teams: { enabled: true } }), adminClient(), magicLinkClient(), emailOTPClient(), multiSessionClient()],
})

/** A Better Auth client result as data, or an Error with its words (and the HTTP status, for the session gate). */
export async function authData<T>(p: Promise<{ data: T | null; error: { message?: string; status?: number } | null }>): Promise<T> {
  const { data, error } = await p
  if (error) throw Object.assign(new Error(authErrorText(error)), { status: error.status })
  return data as T
}

/** Words for a Better Auth client error (never raw JSON). */
export function authErrorText(error: { message?: string; statusText?: string; status?: number } | null | undefined): string {
  if (!error) return ''
  if (error.status === 429) return 'Too many attempts. Wait a minute and try again.'
  return error.message || error.statusText || 'Something went wrong. Try again.'
}

/**
 * After a sign-in: the session store is read again before going on, so the gate in front of the
 * signed-in screens sees the new session instead of the empty one it had.
 */
export function useAfterSignIn(): (next: string) => Promise<void> {
  const { refetch } = authClient.useSession()
  const navigate = useNavigate()
  return async (next) => {
    await refetch()
    navigate(next, { replace: true })
  }
}
