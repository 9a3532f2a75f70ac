// The Better Auth instance: every account, session, admin and organization operation of the
// interface is one of its endpoints. We configure it; we do not reimplement it.
import { betterAuth } from 'better-auth/minimal'
import { drizzleAdapter } from 'better-auth/adapters/drizzle'
import { admin } from 'better-auth/plugins/admin'
import { bearer } from 'better-auth/plugins/bearer'
import { emailOTP } from 'better-auth/plugins/email-otp'
import { jwt } from 'better-auth/plugins/jwt'
import { magicLink } from 'better-auth/plugins/magic-link'
import { multiSession } from 'better-auth/plugins/multi-session'
import { openAPI } from 'better-auth/plugins/open-api'
import { organization } from 'better-auth/plugins/organization'
import { defaultRoles } from 'better-auth/plugins/admin/access'
import { passkey } from '@better-auth/passkey'
import { apiKey } from '@better-auth/api-key'
import { hash, verify } from '@node-rs/argon2'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { authSchema } from '../db/schema.js'
import type { Mailer } from '../mail/mailer.js'
import type { RedisHandle } from '../redis/client.js'
import { inputRules } from './input-rules.js'
import { redisSecondaryStorage } from './secondary-storage.js'
import { deviceIdsOfUser } from '../devices/repository.js'
import { grantConfiguredAdmin } from './users-repository.js'

/** Header our mount writes with the address Fastify resolved (socket, or trusted proxy). */
export const CLIENT_IP_HEADER = 'x-dps-client-ip'
export const AUTH_BASE_PATH = '/api/auth'
/** API keys start with it, so a leaked one is recognisable (secret scanners, logs). */
const API_KEY_PREFIX = 'dps_'
export const API_KEY_HEADER = 'x-api-key'

// OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
// algorithm 2 is Argon2id (the package exports it as an ambient const enum).
const argonOptions = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 }

export type AuthDeps = {
  config: Config
  db: Database
  mailer: Mailer
  redis?: RedisHandle
  log: FastifyBaseLogger
  /** After an account is deleted, with the ids of the devices the database deleted with it. */
  devicesDeleted?: (deviceIds: string[]) => Promise<void>
}

export function createAuth({ config, db, mailer, redis, log, devicesDeleted }: AuthDeps) {
  /** Per account being deleted, its devices, read before the delete cascades to them. */
  const deletingDevices = new Map<string, string[]>()
  const isAdminEmail = (email: string) => config.adminEmails.includes(email.toLowerCase())
  const strict = { window: config.rateLimit.authWindow, max: config.rateLimit.authMax }
  const social = config.social

  return betterAuth({
    appName: 'Display Pairing',
    baseURL: config.baseUrl,
    basePath: AUTH_BASE_PATH,
    secret: config.authSecret,
    telemetry: { enabled: false },
    database: drizzleAdapter(db, { provider: 'pg', schema: authSchema }),
    secondaryStorage: redis ? redisSecondaryStorage(redis) : undefined,
    trustedOrigins: [...config.trustedOrigins, ...(social.apple ? ['https://appleid.apple.com'] : [])],
    logger: {
      level: config.logLevel === 'debug' || config.logLevel === 'trace' ? 'debug' : 'warn',
      log: (level, message, ...args) => log[level]({ args }, `[auth] ${message}`),
    },
    session: {
      // Redis here keeps nothing on disk; the database stays the record of every session so a Redis
      // restart signs nobody out, and admin/session listings keep working.
      storeSessionInDatabase: Boolean(redis),
    },
    user: {
      additionalFields: {
        phoneNumber: { type: 'string', required: false, input: true, fieldName: 'phoneNumber' },
        phoneNumberVerified: { type: 'boolean', required: false, input: false, defaultValue: false },
        // Credits change only through the ledger (issue 5); never through update-user or sign-up.
        balance: { type: 'string', required: false, input: false, defaultValue: '0' },
      },
      changeEmail: {
        enabled: true,
        sendChangeEmailConfirmation: async ({ user, newEmail, url }) =>
          mailer.send({
            kind: 'change-email',
            to: user.email,
            subject: 'Confirm your new e-mail address',
            text: `Someone asked to change the e-mail of your account to ${newEmail}. To approve, open ${url}`,
            link: url,
          }),
      },
      deleteUser: {
        enabled: true,
        sendDeleteAccountVerification: async ({ user, url }) =>
          mailer.send({
            kind: 'delete-account',
            to: user.email,
            subject: 'Confirm deleting your account',
            text: `To delete your account and everything in it, open ${url}`,
            link: url,
          }),
      },
    },
    emailAndPassword: {
      enabled: true,
      minPasswordLength: 8,
      maxPasswordLength: 128,
      revokeSessionsOnPasswordReset: true,
      password: {
        hash: (password) => hash(password, argonOptions),
        verify: ({ hash: stored, password }) => verify(stored, password),
      },
      sendResetPassword: async ({ user, url }) =>
        mailer.send({
          kind: 'reset-password',
          to: user.email,
          subject: 'Reset your password',
          text: `To choose a new password, open ${url}\nIf you did not ask for this, ignore this message.`,
          link: url,
        }),
    },
    emailVerification: {
      sendOnSignUp: true,
      autoSignInAfterVerification: true,
      sendVerificationEmail: async ({ user, url }) =>
        mailer.send({
          kind: 'verify-email',
          to: user.email,
          subject: 'Verify your e-mail address',
          text: `To verify your e-mail address, open ${url}`,
          link: url,
        }),
    },
    account: {
      accountLinking: { enabled: true, trustedProviders: ['google', 'github', 'apple'] },
      // Providers' access and refresh tokens are sealed (XChaCha20-Poly1305, keyed by AUTH_SECRET).
      encryptOAuthTokens: true,
    },
    // Reset, verification and deletion tokens are looked up by their SHA-256, never stored as issued;
    // kept in the database with Redis on too, so a Redis restart does not void the links in people's mail.
    verification: { storeIdentifier: 'hashed', storeInDatabase: true },
    hooks: { before: inputRules },
    socialProviders: {
      ...(social.google ? { google: { clientId: social.google.clientId, clientSecret: social.google.clientSecret } } : {}),
      ...(social.github ? { github: { clientId: social.github.clientId, clientSecret: social.github.clientSecret } } : {}),
      ...(social.apple
        ? {
            apple: {
              clientId: social.apple.clientId,
              clientSecret: social.apple.clientSecret,
              appBundleIdentifier: social.apple.appBundleIdentifier,
            },
          }
        : {}),
    },
    rateLimit: {
      // On in every mode (Better Auth turns it off outside production by default).
      enabled: true,
      window: config.rateLimit.window,
      max: config.rateLimit.max,
      storage: redis ? 'secondary-storage' : 'memory',
      customRules: {
        '/sign-in/*': strict,
        '/sign-up/*': strict,
        '/email-otp/*': strict,
        '/forget-password/*': strict,
        '/request-password-reset': strict,
        '/reset-password': strict,
        '/send-verification-email': strict,
        '/change-password': strict,
        '/change-email': strict,
        '/magic-link/verify': strict,
      },
    },
    advanced: {
      // The mount overwrites this header with Fastify's request.ip, so a client cannot choose its bucket.
      ipAddress: { ipAddressHeaders: [CLIENT_IP_HEADER] },
    },
    databaseHooks: {
      user: {
        create: {
          // An admin's create-user may choose the role; sign-up cannot send one (the field takes no input).
          // Every account starts at a zero balance: credits arrive only through the ledger.
          before: async (user) => ({
            data: {
              ...user,
              balance: '0',
              role: user.emailVerified && isAdminEmail(user.email) ? 'admin' : ((user as { role?: string }).role ?? 'user'),
            },
          }),
        },
        update: {
          // The ledger (src/credits) writes balances with its own SQL; nothing through Better Auth may.
          before: async (data) => {
            if (!('balance' in data)) return
            const { balance: _ignored, ...rest } = data as Record<string, unknown>
            return { data: rest }
          },
          // ADMIN_EMAILS grants the role only once the address is proven to belong to the account.
          after: async (user) => {
            if (!user.emailVerified || !isAdminEmail(user.email)) return
            await grantConfiguredAdmin(db, user.id)
            // Better Auth copies this same object into the user's cached sessions (secondary storage)
            // once the update hooks have run; without this they would keep the old role.
            ;(user as { role?: string }).role = 'admin'
          },
        },
        // An account's deletion takes its devices with it in the database alone (a cascade): a
        // broker that keeps accounts of its own for them (RabbitMQ's internal users) is told,
        // whichever way the account went (the user's own deletion or an admin's).
        delete: {
          before: async (user) => {
            if (devicesDeleted) deletingDevices.set(user.id, await deviceIdsOfUser(db, user.id))
          },
          after: async (user) => {
            const ids = deletingDevices.get(user.id)
            deletingDevices.delete(user.id)
            if (ids?.length)
              await devicesDeleted?.(ids).catch((err) =>
                log.warn({ err, userId: user.id }, "could not tell the broker an account's devices are gone"),
              )
          },
        },
      },
    },
    plugins: [
      // Naming the roles makes set-role and create-user refuse any other role name.
      admin({ defaultRole: 'user', adminRoles: ['admin'], roles: defaultRoles }),
      organization({
        teams: { enabled: true },
        invitationExpiresIn: 7 * 24 * 3600,
        // One rule on both ways to accept (ours and Better Auth's own): only an address its owner
        // has proven may take up an invitation sent to it, or see it.
        requireEmailVerificationOnInvitation: true,
        sendInvitationEmail: async ({ id, email, organization: org, inviter, role }) => {
          // The console's page for it (web/src/pages/invitation.tsx); /accept-invitation/:id is the same without JavaScript.
          const link = `${config.baseUrl}/invitations/${id}`
          await mailer.send({
            kind: 'invitation',
            to: email,
            subject: `You are invited to ${org.name}`,
            text: `${inviter.user.name} invited you to join ${org.name} as ${role}. To accept, open ${link}`,
            link,
          })
        },
      }),
      multiSession({ maximumSessions: 5 }),
      magicLink({
        expiresIn: 15 * 60,
        storeToken: 'hashed',
        sendMagicLink: async ({ email, url }) =>
          mailer.send({ kind: 'magic-link', to: email, subject: 'Your sign-in link', text: `To sign in, open ${url}`, link: url }),
      }),
      emailOTP({
        otpLength: 6,
        storeOTP: 'hashed',
        expiresIn: 10 * 60,
        allowedAttempts: 3,
        sendVerificationOTP: async ({ email, otp, type }) =>
          mailer.send({
            kind: 'otp',
            to: email,
            subject: `Your code: ${otp}`,
            text: `Your ${type} code is ${otp}. It expires in 10 minutes.`,
            code: otp,
          }),
      }),
      passkey({ rpID: config.passkey.rpId, rpName: config.passkey.rpName, origin: config.baseUrl }),
      bearer(),
      jwt(),
      // Keys for scripts and integrations: stored as SHA-256, each limited on its own, accepted by
      // our routes in the x-api-key header (src/auth/guard.ts), not as a Better Auth session.
      apiKey({
        defaultPrefix: API_KEY_PREFIX,
        rateLimit: { enabled: true, timeWindow: 60_000, maxRequests: 600 },
        keyExpiration: { defaultExpiresIn: null, maxExpiresIn: 365 },
      }),
      // Its own reference page loads Scalar from a CDN; GET /docs serves the merged document offline.
      openAPI({ disableDefaultReference: true }),
    ],
  })
}

export type Auth = ReturnType<typeof createAuth>
