// The records the OpenAPI document's request examples name (src/openapi/examples.ts), created
// under exactly the documented ids so an example that names one can be sent unchanged. Each is
// created the way the service itself would store it: Better Auth's records through its own
// adapter (so with REDIS_URL the cached copies exist too), ours through our repositories.
import { createHash } from 'node:crypto'
import sharp from 'sharp'
import { DEFAULT_DISPLAY } from '../../src/images/profiles.js'
import { insertDeviceInit } from '../../src/devices/repository.js'
import { newUserCode, sha256 } from '../../src/devices/codes.js'
import { insertItem, insertPlaylist } from '../../src/schedules/repository.js'
import type { TestApp } from './app.js'

const HOUR = 3600_000

/** A small real photo: uploads are decoded, converted and re-encoded, so placeholder bytes would not do. */
export function photo(format: 'jpeg' | 'png' = 'jpeg'): Promise<Buffer> {
  return sharp({ create: { width: 96, height: 64, channels: 3, background: { r: 40, g: 120, b: 200 } } })
    .toFormat(format)
    .toBuffer()
}

export function exampleRecords(svc: TestApp) {
  const auth = () => svc.app.auth.$context
  const db = svc.app.database.db

  return {
    /** An account with a password and a verified address, under the given id. */
    async user(u: { id: string; name: string; email: string }, password: string) {
      const ctx = await auth()
      await ctx.internalAdapter.createUser({ id: u.id, name: u.name, email: u.email, emailVerified: true }, { method: 'email-password' })
      await ctx.internalAdapter.linkAccount({
        userId: u.id,
        providerId: 'credential',
        accountId: u.id,
        password: await ctx.password.hash(password),
      })
    },

    async userIdOf(email: string): Promise<string> {
      const found = await (await auth()).internalAdapter.findUserByEmail(email)
      if (!found) throw new Error(`no user ${email}`)
      return found.user.id
    },

    async deleteUser(email: string) {
      const ctx = await auth()
      const found = await ctx.internalAdapter.findUserByEmail(email)
      if (found) await ctx.internalAdapter.deleteUser(found.user.id)
    },

    /** A session of `userId` whose token is `token` (as list-sessions would show it), unless it is there already. */
    async session(userId: string, token: string) {
      const ctx = await auth()
      if (await ctx.internalAdapter.findSession(token)) return
      await ctx.internalAdapter.createSession(userId, false, { token }, true)
    },

    /** The token of a password-reset link, as request-password-reset stores it. */
    async resetToken(token: string, userId: string) {
      await (await auth()).internalAdapter.createVerificationValue({
        identifier: `reset-password:${token}`,
        value: userId,
        expiresAt: new Date(Date.now() + HOUR),
      })
    },

    /**
     * A one-time code as the e-mail OTP plugin stores it (storeOTP: 'hashed'): SHA-256, base64url,
     * with its attempt count, under `<type>-otp-<email>`. Replaces any code sent before.
     */
    async otp(type: 'sign-in' | 'email-verification' | 'forget-password', email: string, otp: string) {
      const ctx = await auth()
      const identifier = `${type}-otp-${email}`
      await ctx.internalAdapter.deleteVerificationByIdentifier(identifier)
      const hashed = createHash('sha256').update(otp).digest('base64url')
      await ctx.internalAdapter.createVerificationValue({ identifier, value: `${hashed}:0`, expiresAt: new Date(Date.now() + HOUR) })
    },

    /** A pending pairing, as POST /api/device/init stores it, with the codes given. */
    async pairing(p: { id: string; deviceCode: string; pinCode: string; userCode?: string }) {
      await insertDeviceInit(
        db,
        {
          id: p.id,
          deviceCodeHash: sha256(p.deviceCode),
          userCode: p.userCode ?? newUserCode(),
          pinCode: p.pinCode,
          expiresAt: new Date(Date.now() + HOUR),
          interval: svc.config.devices.pollInterval,
          display: { ...DEFAULT_DISPLAY },
          info: { model: 'frame-7', firmware: '1.3.2' },
        },
        () => {
          throw new Error(`pin ${p.pinCode} is taken by another pending pairing`)
        },
      )
    },

    async object(key: string, body: Buffer, contentType: string) {
      await svc.app.storage.put(key, body, { contentType })
    },

    /** A playlist of `userId` with one upload item per item id. */
    async playlist(p: { id: string; userId: string; itemIds: readonly string[]; uploadKey: string }) {
      await insertPlaylist(db, { id: p.id, userId: p.userId, name: 'Holiday photos', mode: 'sequential', itemSeconds: 3600 })
      for (const [position, id] of p.itemIds.entries())
        await insertItem(db, { id, playlistId: p.id, position, kind: 'upload', ref: p.uploadKey, addedBy: p.userId })
    },

    /** An organization `ownerId` owns, as organization/create stores it. */
    async organization(o: { id: string; name: string; slug: string; ownerId: string }) {
      const { adapter } = await auth()
      await adapter.create({
        model: 'organization',
        data: { id: o.id, name: o.name, slug: o.slug, createdAt: new Date() },
        forceAllowId: true,
      })
      await adapter.create({ model: 'member', data: { organizationId: o.id, userId: o.ownerId, role: 'owner', createdAt: new Date() } })
    },

    /** A pending invitation under the given id (any earlier one with that id is gone). */
    async invitation(i: { id: string; organizationId: string; email: string; inviterId: string }) {
      const { adapter } = await auth()
      await adapter.delete({ model: 'invitation', where: [{ field: 'id', value: i.id }] })
      await adapter.create({
        model: 'invitation',
        data: {
          id: i.id,
          organizationId: i.organizationId,
          email: i.email,
          role: 'member',
          status: 'pending',
          inviterId: i.inviterId,
          expiresAt: new Date(Date.now() + 24 * HOUR),
          createdAt: new Date(),
        },
        forceAllowId: true,
      })
    },

    /** Gives the membership of `userId` in the organization the id `memberId`. */
    async memberId(organizationId: string, userId: string, memberId: string) {
      const { adapter } = await auth()
      const found = await adapter.findOne<Record<string, unknown>>({
        model: 'member',
        where: [
          { field: 'organizationId', value: organizationId },
          { field: 'userId', value: userId },
        ],
      })
      if (!found) throw new Error(`${userId} is not a member of ${organizationId}`)
      await adapter.delete({ model: 'member', where: [{ field: 'id', value: found.id as string }] })
      await adapter.create({ model: 'member', data: { ...found, id: memberId }, forceAllowId: true })
    },

    async team(t: { id: string; organizationId: string; name: string }) {
      const { adapter } = await auth()
      await adapter.create({
        model: 'team',
        data: { id: t.id, organizationId: t.organizationId, name: t.name, createdAt: new Date(), updatedAt: new Date() },
        forceAllowId: true,
      })
    },

    /** A passkey of `userId` as verify-registration stores it (its key material is not used here). */
    async passkey(id: string, userId: string) {
      const { adapter } = await auth()
      await adapter.create({
        model: 'passkey',
        data: {
          id,
          userId,
          name: 'iPhone',
          publicKey: 'pQECAyYgASFYIPo1Jq9Ue5wL4fM2kGZ7gH2sYwXoZ9s1b3nQmVxPzKcRIlggR3k8',
          credentialID: 'pX3b9CkQ2rT7vW1yZ5aD8fG0hJ4kL6mN',
          counter: 0,
          deviceType: 'multiDevice',
          backedUp: true,
          transports: 'internal,hybrid',
          createdAt: new Date(),
        },
        forceAllowId: true,
      })
    },

    /** An API key of `userId`, stored as the API-key plugin stores one (only the key's hash). */
    async apiKey(id: string, userId: string) {
      const { adapter } = await auth()
      await adapter.create({
        model: 'apikey',
        data: {
          id,
          configId: 'default',
          name: 'Kitchen display script',
          start: 'dps_kT',
          prefix: 'dps_',
          key: createHash('sha256').update(`dps_${id}`).digest('base64url'),
          referenceId: userId,
          enabled: true,
          rateLimitEnabled: true,
          requestCount: 0,
          createdAt: new Date(),
          updatedAt: new Date(),
        },
        forceAllowId: true,
      })
    },

    /**
     * A Google account linked to `userId`, as a Google sign-in stores it: the provider's user id
     * and a sealed access token that is still valid.
     */
    async googleAccount(id: string, userId: string) {
      const ctx = await auth()
      const { symmetricEncrypt } = await import('better-auth/crypto')
      await ctx.adapter.create({
        model: 'account',
        data: {
          id,
          userId,
          providerId: 'google',
          accountId: '109876543210987654321',
          accessToken: await symmetricEncrypt({ key: ctx.secretConfig, data: 'ya29.a0AfB_byExampleAccessToken' }),
          accessTokenExpiresAt: new Date(Date.now() + HOUR),
          scope: 'openid email profile',
          createdAt: new Date(),
          updatedAt: new Date(),
        },
        forceAllowId: true,
      })
    },
  }
}
