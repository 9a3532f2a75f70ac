// Better Auth clients for passkeys and API keys, imported only by the sign-in and account screens
// (their own chunks). Same service, same cookie: a sign-in here is seen by the main client once
// it reads the session again (useAfterSignIn).
import { apiKeyClient } from '@better-auth/api-key/client'
import { passkeyClient } from '@better-auth/passkey/client'
import { createAuthClient } from 'better-auth/react'
import { baseURL } from './auth'

export const passkeyAuth = createAuthClient({ baseURL, plugins: [passkeyClient()] })
export const apiKeyAuth = createAuthClient({ baseURL, plugins: [apiKeyClient()] })
