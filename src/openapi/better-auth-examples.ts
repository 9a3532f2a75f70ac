// Request examples for Better Auth's operations. Its generated document has none (a docs page then
// builds one from the schema: "string" for every field, which no endpoint accepts) and, where it
// has a field example, it is a callbackURL on another site, which this service refuses
// (INVALID_CALLBACK_URL). These are bodies this service accepts as they are: callback URLs are
// paths of the service, people and ids are the ones in examples.ts, and passwords meet the policy
// (8 to 128 characters). test/openapi/examples.test.ts sends every one of them.
import { ada, exampleIds, grace } from './examples.js'

/**
 * A WebAuthn credential as the browser's navigator.credentials answers it (base64url fields,
 * shortened): what a passkey ceremony sends back after the authenticator signed the challenge.
 */
const webauthnCredential = (response: Record<string, string | string[]>) => ({
  id: 'pX3b9CkQ2rT7vW1yZ5aD8fG0hJ4kL6mN',
  rawId: 'pX3b9CkQ2rT7vW1yZ5aD8fG0hJ4kL6mN',
  type: 'public-key',
  authenticatorAttachment: 'platform',
  clientExtensionResults: {},
  response: {
    clientDataJSON: 'eyJ0eXBlIjoid2ViYXV0aG4uZ2V0IiwiY2hhbGxlbmdlIjoiWTJoaGJHeGxibWRsIiwib3JpZ2luIjoiaHR0cDovL2xvY2FsaG9zdDozMDAwIn0',
    ...response,
  },
})

/** Bodies by Better Auth path (relative to its base path; every one of these is a POST). */
export const betterAuthExamples: Record<string, unknown> = {
  // Accounts and sessions
  '/sign-up/email': { name: ada.name, email: ada.email, password: ada.password, callbackURL: '/' },
  '/sign-in/email': { email: ada.email, password: ada.password, rememberMe: true },
  '/sign-out': {},
  '/send-verification-email': { email: ada.email, callbackURL: '/' },
  '/verify-password': { password: ada.password },
  '/change-email': { newEmail: ada.newEmail, callbackURL: '/' },
  '/change-password': { currentPassword: ada.password, newPassword: ada.newPassword },
  '/update-user': { name: 'Ada King', phoneNumber: '+442079460000' },
  '/delete-user': { password: ada.password, callbackURL: '/' },
  '/request-password-reset': { email: ada.email, redirectTo: '/new-password' },
  '/reset-password': { newPassword: ada.password, token: exampleIds.resetToken },
  '/revoke-session': { token: exampleIds.sessionToken },
  '/revoke-sessions': {},
  '/revoke-other-sessions': {},
  '/sign-in/social': { provider: 'google', callbackURL: '/' },
  '/callback/{id}': { code: '4/0AanRRrsT2kXq9vH7bL3mY8wZ1pC5dF6gJ0nQ4sU', state: 'hGq7XcT2vLm9R4pWzK8sN1bY5dF3jA6e' },
  '/link-social': { provider: 'google', callbackURL: '/' },
  '/unlink-account': { accountId: exampleIds.accountId },
  '/refresh-token': { accountId: exampleIds.accountId },
  '/get-access-token': { accountId: exampleIds.accountId },

  // User administration (admins only)
  '/admin/create-user': { email: 'alan@example.com', password: 'bombe-machine-1939', name: 'Alan Turing', role: 'user' },
  '/admin/set-role': { userId: grace.id, role: 'admin' },
  '/admin/update-user': { userId: grace.id, data: { name: 'Grace Brewster Hopper' } },
  '/admin/list-user-sessions': { userId: grace.id },
  '/admin/ban-user': { userId: grace.id, banReason: 'Sending spam invitations', banExpiresIn: 604800 },
  '/admin/unban-user': { userId: grace.id },
  '/admin/impersonate-user': { userId: grace.id },
  '/admin/revoke-user-session': { sessionToken: exampleIds.sessionToken },
  '/admin/revoke-user-sessions': { userId: grace.id },
  '/admin/set-user-password': { userId: grace.id, newPassword: 'compiler-a0-1952' },
  '/admin/remove-user': { userId: grace.id },
  '/admin/has-permission': { permissions: { user: ['ban'] } },

  // Organizations, members, invitations and teams
  '/organization/check-slug': { slug: 'acme-studio' },
  '/organization/create': { name: 'Acme Studio', slug: 'acme-studio' },
  '/organization/update': { organizationId: exampleIds.organizationId, data: { name: 'Hopper Lab' } },
  '/organization/set-active': { organizationId: exampleIds.organizationId },
  '/organization/invite-member': { email: ada.email, role: 'member', organizationId: exampleIds.organizationId },
  '/organization/accept-invitation': { invitationId: exampleIds.invitationId },
  '/organization/reject-invitation': { invitationId: exampleIds.invitationId },
  '/organization/cancel-invitation': { invitationId: exampleIds.invitationId },
  '/organization/update-member-role': { memberId: exampleIds.memberId, role: 'admin', organizationId: exampleIds.organizationId },
  '/organization/remove-member': { memberIdOrEmail: ada.email, organizationId: exampleIds.organizationId },
  '/organization/leave': { organizationId: exampleIds.organizationId },
  '/organization/has-permission': { permissions: { invitation: ['create'] } },
  '/organization/create-team': { name: 'Kitchen displays', organizationId: exampleIds.organizationId },
  '/organization/update-team': { teamId: exampleIds.teamId, data: { name: 'Hallway displays' } },
  '/organization/add-team-member': { teamId: exampleIds.teamId, userId: grace.id },
  '/organization/set-active-team': { teamId: exampleIds.teamId },
  '/organization/remove-team-member': { teamId: exampleIds.teamId, userId: grace.id },
  '/organization/remove-team': { teamId: exampleIds.teamId, organizationId: exampleIds.organizationId },
  '/organization/delete': { organizationId: exampleIds.organizationId },

  // Several accounts signed in on one client
  '/multi-session/set-active': { sessionToken: exampleIds.sessionToken },
  '/multi-session/revoke': { sessionToken: exampleIds.sessionToken },

  // Magic link and e-mail one-time codes
  '/sign-in/magic-link': { email: ada.email, callbackURL: '/' },
  '/email-otp/send-verification-otp': { email: ada.email, type: 'sign-in' },
  '/email-otp/check-verification-otp': { email: ada.email, type: 'sign-in', otp: exampleIds.otp },
  '/sign-in/email-otp': { email: ada.email, otp: exampleIds.otp },
  '/email-otp/verify-email': { email: ada.email, otp: exampleIds.otp },
  '/email-otp/request-password-reset': { email: ada.email },
  '/forget-password/email-otp': { email: ada.email },
  '/email-otp/reset-password': { email: ada.email, otp: exampleIds.otp, password: ada.password },

  // Passkeys
  '/passkey/verify-registration': {
    name: 'MacBook Touch ID',
    response: webauthnCredential({
      attestationObject: 'o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YViYSZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2NdAAAAAA',
      transports: ['internal', 'hybrid'],
    }),
  },
  '/passkey/verify-authentication': {
    response: webauthnCredential({
      authenticatorData: 'SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MdAAAAAA',
      signature: 'MEUCIQDx3m2R0aT9vW5yZ8bC1dF4gH7jK0mN3pQ6sT9uV2wX5AIgYj1k4n7q0t3w6z9c2f5i8l1o4r7u0x3a6d9g2j5m8p0',
      userHandle: 'aWk1cjhBRUFCVVhUdDJUeDk0Qzh5YkM0c0dOR2xOU3A',
    }),
  },
  '/passkey/update-passkey': { id: exampleIds.passkeyId, name: 'MacBook Touch ID' },
  '/passkey/delete-passkey': { id: exampleIds.passkeyId },

  // API keys
  '/api-key/create': { name: 'Kitchen display script', expiresIn: 7776000 },
  '/api-key/update': { keyId: exampleIds.apiKeyId, name: 'Hallway display script' },
  '/api-key/delete': { keyId: exampleIds.apiKeyId },
}
