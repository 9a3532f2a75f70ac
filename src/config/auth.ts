// Accounts and sessions (Better Auth): the signing secret, admins, social sign-in, passkeys.
import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import type { Keeper } from './data-dir.js'
import { type Section, type Values, list, optionalString, variable } from './variables.js'

type SocialProvider = { clientId: string; clientSecret: string; appBundleIdentifier?: string }

const socialPair = (provider: string, prefix: string) => ({
  clientId: variable(
    `${prefix}_CLIENT_ID`,
    optionalString,
    `${provider} sign-in: the OAuth client id (enabled when the secret is set too)`,
  ),
  clientSecret: variable(`${prefix}_CLIENT_SECRET`, optionalString, `${provider} sign-in: the OAuth client secret`),
})

export const auth = {
  title: 'Accounts',
  variables: {
    authSecret: variable(
      'AUTH_SECRET',
      z.string().min(32, 'AUTH_SECRET must be at least 32 characters').optional(),
      'Better Auth signing secret; required with `NODE_ENV=production`',
      { default: 'generated into `DATA_DIR/auth-secret`' },
    ),
    adminEmails: variable(
      'ADMIN_EMAILS',
      list.transform((emails) => emails.map((e) => e.toLowerCase())),
      'these accounts get the admin role once their e-mail is verified',
      { values: 'comma list' },
    ),
    sessionCacheTtlMs: variable(
      'SESSION_CACHE_TTL_MS',
      z.coerce.number().int().min(0).max(300_000).default(30_000),
      'how long a resolved session is reused (`0` = no cache); account changes clear it at once',
    ),
    social: {
      google: socialPair('Google', 'GOOGLE'),
      github: socialPair('GitHub', 'GITHUB'),
      apple: {
        ...socialPair('Apple', 'APPLE'),
        appBundleIdentifier: variable(
          'APPLE_APP_BUNDLE_IDENTIFIER',
          optionalString,
          "Apple sign-in from an app: the app's bundle identifier",
        ),
      },
    },
    passkey: {
      rpId: variable('PASSKEY_RP_ID', optionalString, 'WebAuthn relying party id', { default: 'host of `BASE_URL`' }),
      rpName: variable('PASSKEY_RP_NAME', z.string().default('Display Pairing'), 'WebAuthn relying party name'),
    },
  },
} satisfies Section

type Pair = { clientId?: string; clientSecret?: string }

function pair({ clientId, clientSecret }: Pair, extra?: Partial<SocialProvider>): SocialProvider | undefined {
  return clientId && clientSecret ? { clientId, clientSecret, ...extra } : undefined
}

export function authSettings({ authSecret, social, passkey, ...fields }: Values<typeof auth.variables>, baseUrl: string, keep: Keeper) {
  return {
    ...fields,
    authSecret: authSecret ?? keep('auth-secret', () => randomBytes(32).toString('base64url')),
    social: {
      google: pair(social.google),
      github: pair(social.github),
      apple: pair(social.apple, { appBundleIdentifier: social.apple.appBundleIdentifier }),
    },
    passkey: { rpId: passkey.rpId ?? new URL(baseUrl).hostname, rpName: passkey.rpName },
  }
}
