// Every request example in GET /api/openapi.json works when sent as it is. The test walks the
// document on a fresh service and sends each operation's example body unchanged: what is not in
// the body (the caller's session, path and query parameters, the file of a multipart body) is
// made here, and the records an example names by id are created under that id first
// (test/helpers/example-records.ts), the way the service would have stored them. Each answer must
// be one of the operation's documented success statuses.
//
// The walk is one fixed list (steps below), in the order a person would go: sign up before signing
// in, pair a frame before sending it anything, delete last. The interface's root copies of Better
// Auth's operations take the same bodies as their /api/auth originals, so they are walked again on
// a second fresh service, where the same examples (sign up Ada, sign her in, …) are as new as on
// the first.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { AUTH_BASE_PATH } from '../../src/auth/auth.js'
import { newPinCode, sha256 } from '../../src/devices/codes.js'
import { setDeviceSecret } from '../../src/devices/repository.js'
import { betterAuthExamples } from '../../src/openapi/better-auth-examples.js'
import { operationsOf } from '../../src/openapi/document.js'
import { ada, exampleIds, grace } from '../../src/openapi/examples.js'
import type { OpenApiDocument, Operation } from '../../src/openapi/types.js'
import { signUpAdmin } from '../helpers/admin.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { exampleRecords, photo } from '../helpers/example-records.js'
import { waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

const ADMIN_EMAIL = 'root@example.com'
const MQTT_AUTH_SECRET = 'hook-secret-for-the-examples'
const GRACE_PASSWORD = 'cobol-1959-flow-matic'
const TRMNL_MAC = 'A0:B7:65:1C:2D:3E'

/**
 * Operations whose example cannot succeed against a local service, whatever is prepared: each
 * needs something only an outside party can make (a provider, an authenticator). (Operations that
 * are off in this service's Better Auth configuration are left out of the document.) Keys are
 * "METHOD path" with /api/auth left out, so a key covers the root copy of an operation too. The
 * test fails if a key names no operation, and if one of these is sent.
 */
const cannotSucceedHere: Record<string, string> = {
  'POST /callback/{id}': 'an OAuth callback carries an authorization code the provider issued for a sign-in it started',
  'POST /refresh-token': "the service asks the provider's token endpoint (Google) for new tokens",
  'POST /account-info': "the service asks the provider's user-info endpoint (Google) with the account's token",
  'POST /passkey/verify-registration': "the body is an authenticator's signature over the challenge the service issued moments before",
  'POST /passkey/verify-authentication': "the body is an authenticator's signature over the challenge the service issued moments before",
}

/** Bodies of raw bytes: no JSON example can hold them, so the test sends a real image (and still wants success). */
const bytesOnly: Record<string, string> = {
  'POST /api/upload': 'a multipart body whose only part is the image file',
  'PUT /files/{path}': 'the raw bytes of a presigned upload',
}

type Tap = { pass(message: string): void; fail(message: string): void }
type Actor = 'ada' | 'grace' | 'admin'
type Call = {
  as?: Actor
  headers?: Record<string, string>
  params?: Record<string, string>
  query?: Record<string, string>
  /** The file part of a multipart body, or the whole body of a raw one. */
  bytes?: { body: Buffer; contentType: string }
}
type Answer = { status: number; text: string; json: Record<string, unknown> | undefined }
type Walk = {
  svc: TestApp
  records: ReturnType<typeof exampleRecords>
  tokens: Partial<Record<Actor, string>>
  /** Creates the actor on first use (Ada signs up through the examples themselves). */
  token(who: Actor): Promise<string>
}
type Step = {
  /** "METHOD path" as documented, /api/auth left out. */
  op: string
  prepare?: (w: Walk) => Promise<Call> | Call
  after?: (w: Walk, res: Answer) => Promise<void> | void
  /** For answers whose 200 can still mean no (the MQTT hooks answer allow or deny). */
  expect?: (res: Answer) => string | undefined
}

const as = (who: Actor) => (): Call => ({ as: who })

async function signIn(w: Walk, email: string, password: string): Promise<string> {
  const res = await appFetch(`${w.svc.url}${AUTH_BASE_PATH}/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: w.svc.url },
    body: JSON.stringify({ email, password }),
  })
  const body = (await res.json()) as { token?: string }
  if (!body.token) throw new Error(`sign-in of ${email} failed: ${res.status} ${JSON.stringify(body)}`)
  return body.token
}

const keepToken = (who: Actor) => (w: Walk, res: Answer) => {
  if (typeof res.json?.token === 'string') w.tokens[who] = res.json.token
}

/** Better Auth's signed cookie value (HMAC-SHA256 of the value with its secret, base64). */
const signedCookie = (value: string, secret: string) =>
  encodeURIComponent(`${value}.${createHmac('sha256', secret).update(value).digest('base64')}`)

/**
 * Ada's client with two accounts signed in: her own session cookie and the multi-session cookie of
 * the documented session token, as a second sign-in on that client would have left them.
 */
async function multiSessionClient(w: Walk): Promise<Call> {
  await w.records.session(await w.records.userIdOf(ada.email), exampleIds.sessionToken)
  const name = 'better-auth.session_token'
  const secret = w.svc.config.authSecret
  const own = await w.token('ada')
  return {
    headers: {
      cookie: `${name}=${signedCookie(own, secret)}; ${name}_multi-${exampleIds.sessionToken.toLowerCase()}=${signedCookie(exampleIds.sessionToken, secret)}`,
    },
  }
}

/** The screen POST /api/screens made, for the screen steps after it. */
const screen = { id: '', token: '' }
const keepScreen = (_w: Walk, res: Answer) => {
  screen.id = String(res.json?.id)
  screen.token = String(res.json?.token)
}

const hookAnswer = (res: Answer) => (res.text === 'allow' ? undefined : `answered ${res.text}, not allow`)

const steps: Step[] = [
  // Ada's account.
  { op: 'POST /sign-up/email', after: keepToken('ada') },
  {
    op: 'POST /send-verification-email',
    // She follows the link, so her address is verified from here on (as most of what follows needs).
    after: async (w) => {
      const mail = await waitForMail(w.svc.dataDir, ada.email, 'verify-email')
      const res = await appFetch(mail.link as string, { redirect: 'manual' })
      if (res.status >= 400) throw new Error(`verification link answered ${res.status}`)
    },
  },
  { op: 'POST /sign-in/email', after: keepToken('ada') },
  { op: 'POST /verify-password', prepare: as('ada') },
  { op: 'POST /update-user', prepare: as('ada') },
  // Her address is verified: the current address is asked to approve, and it stays hers until then.
  { op: 'POST /change-email', prepare: as('ada') },
  { op: 'POST /request-password-reset' },
  { op: 'POST /forget-password' },
  { op: 'POST /change-password', prepare: as('ada') },
  {
    op: 'POST /reset-password',
    // The link of a reset she asked for; the example sets her first password back.
    prepare: async (w) => {
      await w.records.resetToken(exampleIds.resetToken, await w.records.userIdOf(ada.email))
      return {}
    },
    // A reset signs her out everywhere.
    after: async (w) => {
      w.tokens.ada = await signIn(w, ada.email, ada.password)
    },
  },
  // With her password: a confirmation link is e-mailed; nothing is deleted before it is opened.
  { op: 'POST /delete-user', prepare: as('ada') },

  // E-mail one-time codes and magic links: the code is the one the example names, as if e-mailed.
  { op: 'POST /email-otp/send-verification-otp' },
  { op: 'POST /email-otp/check-verification-otp', prepare: otp('sign-in') },
  { op: 'POST /sign-in/email-otp', prepare: otp('sign-in'), after: keepToken('ada') },
  { op: 'POST /email-otp/verify-email', prepare: otp('email-verification') },
  { op: 'POST /email-otp/request-password-reset' },
  { op: 'POST /forget-password/email-otp' },
  {
    op: 'POST /email-otp/reset-password',
    prepare: otp('forget-password'),
    after: async (w) => {
      w.tokens.ada = await signIn(w, ada.email, ada.password)
    },
  },
  { op: 'POST /sign-in/magic-link' },

  // Grace pairs a frame. A frame starts with codes of its own; the examples name two pairings
  // waiting under the documented codes.
  { op: 'POST /api/device/init' },
  {
    op: 'POST /api/device/deny',
    prepare: async (w) => {
      await w.records.pairing({
        id: crypto.randomUUID(),
        deviceCode: crypto.randomUUID(),
        pinCode: newPinCode(),
        userCode: exampleIds.userCode,
      })
      return { as: 'grace' }
    },
  },
  {
    op: 'POST /api/device/validate',
    prepare: async (w) => {
      await w.records.pairing({ id: exampleIds.deviceId, deviceCode: exampleIds.deviceCode, pinCode: exampleIds.pinCode })
      return { as: 'grace' }
    },
  },
  {
    op: 'POST /api/device/get-init-device',
    // The answer carries a new random MQTT secret; the frame's secret becomes the documented one,
    // which the broker-hook examples send.
    after: async (w) => {
      await setDeviceSecret(w.svc.app.database.db, exampleIds.deviceId, sha256(exampleIds.deviceSecret))
    },
  },
  { op: 'PATCH /api/device/{id}', prepare: () => ({ as: 'grace', params: { id: exampleIds.deviceId } }) },
  { op: 'POST /api/device/{id}/command', prepare: () => ({ as: 'grace', params: { id: exampleIds.deviceId } }) },
  {
    op: 'POST /api/device/{id}/logs',
    prepare: () => ({ params: { id: exampleIds.deviceId }, headers: { authorization: `Bearer ${exampleIds.deviceSecret}` } }),
  },
  {
    op: 'POST /api/device/mqtt-auth',
    prepare: () => ({ headers: { authorization: `Bearer ${MQTT_AUTH_SECRET}` } }),
    expect: (res) => (res.json?.result === 'allow' ? undefined : `answered ${res.text}, not allow`),
  },
  ...['user', 'vhost', 'resource', 'topic'].map(
    (what): Step => ({
      op: `POST /api/device/rabbitmq/${what}`,
      prepare: () => ({ headers: { authorization: `Basic ${Buffer.from(`rabbitmq:${MQTT_AUTH_SECRET}`).toString('base64')}` } }),
      expect: hookAnswer,
    }),
  ),
  {
    op: 'POST /api/log',
    // A TRMNL frame asks to pair and Grace claims it by its code; it then sends its log with its headers.
    prepare: async (w) => {
      const setup = (await (await appFetch(`${w.svc.url}/api/setup`, { headers: { ID: TRMNL_MAC, 'FW-Version': '1.5.2' } })).json()) as {
        api_key: string
        friendly_id: string
      }
      const claim = await appFetch(`${w.svc.url}/api/device/validate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${await w.token('grace')}` },
        body: JSON.stringify({ pinCode: setup.friendly_id, name: 'Hall TRMNL' }),
      })
      if (!claim.ok) throw new Error(`claiming the TRMNL frame: ${claim.status} ${await claim.text()}`)
      return { headers: { ID: TRMNL_MAC, 'Access-Token': setup.api_key } }
    },
  },

  // Uploads: a direct upload (presign, PUT, complete), a multipart one, and sending one to the frame.
  { op: 'POST /api/upload/presign', prepare: as('grace') },
  {
    op: 'PUT /files/{path}',
    // The presigned link of the documented direct upload, as presign answers it for that key.
    prepare: async (w) => {
      const body = await photo('png')
      const link = new URL(
        await w.svc.app.storage.presign(exampleIds.incomingKey, {
          method: 'PUT',
          expiresIn: 900,
          contentType: 'image/png',
          contentLength: body.length,
        }),
      )
      return {
        params: { path: exampleIds.incomingKey },
        query: Object.fromEntries(link.searchParams),
        bytes: { body, contentType: 'image/png' },
      }
    },
  },
  { op: 'POST /api/upload/complete', prepare: as('grace') },
  { op: 'POST /api/upload', prepare: async () => ({ as: 'grace', bytes: { body: await photo('jpeg'), contentType: 'image/jpeg' } }) },
  {
    op: 'POST /api/upload/send',
    // The documented upload of Grace's (an upload's key is made by the service; this one is stored under it).
    prepare: async (w) => {
      await w.records.object(exampleIds.uploadKey, await photo('jpeg'), 'image/jpeg')
      return { as: 'grace' }
    },
  },

  { op: 'POST /api/prompts', prepare: as('grace') },
  { op: 'POST /api/generate', prepare: as('grace') },

  // The subscription is removed before the send: nothing leaves for a push service on the Internet.
  { op: 'POST /api/notifications/subscriptions', prepare: as('grace') },
  { op: 'DELETE /api/notifications/subscriptions', prepare: as('grace') },
  { op: 'POST /api/notifications/send', prepare: as('grace') },
  { op: 'PATCH /api/notifications/preferences', prepare: as('grace') },

  { op: 'POST /api/playlists', prepare: as('grace') },
  {
    op: 'PATCH /api/playlists/{id}',
    // The documented playlist, with its two documented items.
    prepare: async (w) => {
      await w.records.playlist({
        id: exampleIds.playlistId,
        userId: grace.id,
        itemIds: exampleIds.playlistItemIds,
        uploadKey: exampleIds.uploadKey,
      })
      return { as: 'grace', params: { id: exampleIds.playlistId } }
    },
  },
  { op: 'PUT /api/playlists/{id}/order', prepare: () => ({ as: 'grace', params: { id: exampleIds.playlistId } }) },
  { op: 'POST /api/playlists/{id}/items', prepare: () => ({ as: 'grace', params: { id: exampleIds.playlistId } }) },
  { op: 'PUT /api/device/{id}/schedule', prepare: () => ({ as: 'grace', params: { id: exampleIds.deviceId } }) },

  // Grace's screen: created, changed, a draft of it (and of a new one) previewed, shown on her frame, fed by its webhook with the token it was created with.
  { op: 'POST /api/screens', prepare: as('grace'), after: keepScreen },
  { op: 'POST /api/screens/recipes', prepare: as('grace') },
  { op: 'PATCH /api/screens/{id}', prepare: () => ({ as: 'grace', params: { id: screen.id } }) },
  { op: 'POST /api/screens/{id}/preview', prepare: () => ({ as: 'grace', params: { id: screen.id } }) },
  { op: 'POST /api/screens/preview', prepare: as('grace') },
  { op: 'POST /api/screens/{id}/show', prepare: () => ({ as: 'grace', params: { id: screen.id } }) },
  {
    op: 'POST /api/screens/{id}/data',
    prepare: () => ({ params: { id: screen.id }, headers: { authorization: `Bearer ${screen.token}` } }),
  },

  { op: 'POST /api/admin/credits', prepare: as('admin') },
  {
    op: 'POST /api/admin/firmware',
    prepare: () => ({ as: 'admin', bytes: { body: Buffer.alloc(64 * 1024, 0xa5), contentType: 'application/octet-stream' } }),
  },
  {
    op: 'PUT /api/admin/firmware-rollouts/{model}/{channel}',
    prepare: () => ({ as: 'admin', params: { model: 'frame-7', channel: 'stable' } }),
  },
  { op: 'PUT /api/admin/devices/{id}/firmware', prepare: () => ({ as: 'admin', params: { id: exampleIds.deviceId } }) },

  // Organizations: Grace's own, Ada invited to it.
  { op: 'POST /organization/check-slug', prepare: as('grace') },
  { op: 'POST /organization/create', prepare: as('grace') },
  {
    op: 'POST /organization/update',
    prepare: async (w) => {
      await w.records.organization({ id: exampleIds.organizationId, name: 'Grace’s lab', slug: 'graces-lab', ownerId: grace.id })
      return { as: 'grace' }
    },
  },
  { op: 'POST /organization/set-active', prepare: as('grace') },
  { op: 'POST /organization/invite-member', prepare: as('grace') },
  { op: 'POST /organization/reject-invitation', prepare: invitation('ada') },
  { op: 'POST /organization/cancel-invitation', prepare: invitation('grace') },
  {
    op: 'POST /organization/accept-invitation',
    prepare: invitation('ada'),
    // Her membership is the documented one.
    after: async (w) => {
      await w.records.memberId(exampleIds.organizationId, await w.records.userIdOf(ada.email), exampleIds.memberId)
    },
  },
  { op: 'POST /organization/update-member-role', prepare: as('grace') },
  { op: 'POST /organization/remove-member', prepare: as('grace') },
  { op: 'POST /api/invitations/accept', prepare: invitation('ada') },
  { op: 'POST /organization/leave', prepare: as('ada') },
  { op: 'POST /organization/has-permission', prepare: as('grace') },
  { op: 'POST /organization/create-team', prepare: as('grace') },
  {
    op: 'POST /organization/update-team',
    prepare: async (w) => {
      await w.records.team({ id: exampleIds.teamId, organizationId: exampleIds.organizationId, name: 'Kitchen displays' })
      return { as: 'grace' }
    },
  },
  { op: 'POST /organization/add-team-member', prepare: as('grace') },
  { op: 'POST /organization/set-active-team', prepare: as('grace') },
  { op: 'POST /organization/remove-team-member', prepare: as('grace') },
  {
    op: 'POST /organization/remove-team',
    // From another client of hers: Better Auth refuses to delete the team a session has active.
    prepare: async (w) => {
      w.tokens.grace = await signIn(w, grace.email, GRACE_PASSWORD)
      return { as: 'grace' }
    },
  },

  // Ada's passkey, API key and linked Google account (Google is configured, with a made-up client).
  {
    op: 'POST /passkey/update-passkey',
    prepare: async (w) => {
      await w.records.passkey(exampleIds.passkeyId, await w.records.userIdOf(ada.email))
      return { as: 'ada' }
    },
  },
  { op: 'POST /passkey/delete-passkey', prepare: as('ada') },
  { op: 'POST /api-key/create', prepare: as('ada') },
  {
    op: 'POST /api-key/update',
    prepare: async (w) => {
      await w.records.apiKey(exampleIds.apiKeyId, await w.records.userIdOf(ada.email))
      return { as: 'ada' }
    },
  },
  { op: 'POST /api-key/delete', prepare: as('ada') },
  { op: 'POST /sign-in/social' },
  { op: 'POST /link-social', prepare: as('ada') },
  {
    op: 'POST /get-access-token',
    prepare: async (w) => {
      await w.records.googleAccount(exampleIds.accountId, await w.records.userIdOf(ada.email))
      return { as: 'ada' }
    },
  },
  { op: 'POST /unlink-account', prepare: as('ada') },

  // Ada's sessions: a second account on her client, then revoking.
  { op: 'POST /multi-session/set-active', prepare: multiSessionClient },
  { op: 'POST /multi-session/revoke', prepare: multiSessionClient },
  {
    op: 'POST /revoke-session',
    prepare: async (w) => {
      await w.records.session(await w.records.userIdOf(ada.email), exampleIds.sessionToken)
      return { as: 'ada' }
    },
  },
  { op: 'POST /revoke-other-sessions', prepare: as('ada') },

  // Grace's frame and organization go.
  { op: 'POST /api/device/disconnect', prepare: as('grace') },
  {
    op: 'DELETE /api/device/delete',
    // The interface's credential for it: a JWT.
    prepare: async (w) => {
      const res = await appFetch(`${w.svc.url}${AUTH_BASE_PATH}/token`, { headers: { authorization: `Bearer ${await w.token('grace')}` } })
      const { token } = (await res.json()) as { token: string }
      return { headers: { authorization: `Bearer ${token}` } }
    },
  },
  { op: 'POST /organization/delete', prepare: as('grace') },

  // An administrator and Grace's account.
  { op: 'POST /admin/create-user', prepare: as('admin') },
  { op: 'POST /admin/list-user-sessions', prepare: as('admin') },
  { op: 'POST /admin/update-user', prepare: as('admin') },
  // Before she is made an administrator: administrators are not impersonated.
  { op: 'POST /admin/impersonate-user', prepare: as('admin') },
  { op: 'POST /admin/set-role', prepare: as('admin') },
  { op: 'POST /admin/has-permission', prepare: as('admin') },
  { op: 'POST /admin/set-user-password', prepare: as('admin') },
  {
    op: 'POST /admin/revoke-user-session',
    prepare: async (w) => {
      await w.records.session(grace.id, exampleIds.sessionToken)
      return { as: 'admin' }
    },
  },
  { op: 'POST /admin/revoke-user-sessions', prepare: as('admin') },
  { op: 'POST /admin/ban-user', prepare: as('admin') },
  { op: 'POST /admin/unban-user', prepare: as('admin') },
  { op: 'POST /admin/remove-user', prepare: as('admin') },

  // Last: every session of Ada's, then signing out.
  { op: 'POST /revoke-sessions', prepare: as('ada'), after: async (w) => void (w.tokens.ada = await signIn(w, ada.email, ada.password)) },
  { op: 'POST /sign-out', prepare: as('ada') },
]

/** A one-time code for Ada: the documented one, stored as if the service had e-mailed it. */
function otp(type: 'sign-in' | 'email-verification' | 'forget-password') {
  return async (w: Walk): Promise<Call> => {
    await w.records.otp(type, ada.email, exampleIds.otp)
    return {}
  }
}

/** The documented invitation of Ada to Grace's organization, pending again; sent as `who`. */
function invitation(who: Actor) {
  return async (w: Walk): Promise<Call> => {
    await w.records.invitation({
      id: exampleIds.invitationId,
      organizationId: exampleIds.organizationId,
      email: ada.email,
      inviterId: grace.id,
    })
    return { as: who }
  }
}

/** "POST /sign-up/email" for both /api/auth/sign-up/email and its root copy. */
const keyOf = (method: string, path: string) =>
  `${method.toUpperCase()} ${path.startsWith(`${AUTH_BASE_PATH}/`) ? path.slice(AUTH_BASE_PATH.length) : path}`

/** The interface's root paths answered by Better Auth: copies of its operations, tagged default. */
const isRootCopy = (path: string, op: Operation) => !path.startsWith(`${AUTH_BASE_PATH}/`) && Boolean(op.tags?.includes('default'))

type Documented = { path: string; method: string; op: Operation; key: string; mediaType: string; example: unknown }

function withBodies(doc: OpenApiDocument): Documented[] {
  return operationsOf(doc)
    .filter(({ op }) => op.requestBody)
    .map(({ path, method, op }) => {
      const [mediaType, media] = Object.entries(op.requestBody!.content)[0]!
      return { path, method, op, key: keyOf(method, path), mediaType, example: media.example }
    })
}

async function fetchDocument(svc: TestApp): Promise<OpenApiDocument> {
  return (await (await appFetch(`${svc.url}/api/openapi.json`)).json()) as OpenApiDocument
}

function startExamplesApp(tap: Parameters<typeof startApp>[0]) {
  return startApp(tap, {
    env: {
      DEVICE_POLL_INTERVAL: '0',
      ADMIN_EMAILS: ADMIN_EMAIL,
      MQTT_AUTH_SECRET,
      // sign-in/social and link-social answer Google's authorization URL; nothing is asked of Google.
      GOOGLE_CLIENT_ID: 'examples.apps.googleusercontent.com',
      GOOGLE_CLIENT_SECRET: 'examples-client-secret',
    },
  })
}

function newWalk(svc: TestApp): Walk {
  const w: Walk = {
    svc,
    records: exampleRecords(svc),
    tokens: {},
    async token(who) {
      if (!w.tokens[who]) {
        if (who === 'grace') {
          await w.records.user(grace, GRACE_PASSWORD)
          w.tokens.grace = await signIn(w, grace.email, GRACE_PASSWORD)
        } else if (who === 'admin') {
          w.tokens.admin = (await signUpAdmin(svc, ADMIN_EMAIL)).token
        } else {
          throw new Error(`${who} has no session yet: her sign-up and sign-in are examples earlier in the walk`)
        }
      }
      return w.tokens[who]!
    },
  }
  return w
}

async function send(w: Walk, d: Documented, call: Call): Promise<Answer> {
  const url = new URL(w.svc.url + d.path.replace(/\{(\w+)\}/g, (_m, name: string) => call.params?.[name] ?? `{${name}}`))
  for (const [name, value] of Object.entries(call.query ?? {})) url.searchParams.set(name, value)
  // What a browser sends on its own; Better Auth wants it when a cookie or a fetch is involved.
  const headers: Record<string, string> = { origin: w.svc.url }
  if (call.as) headers.authorization = `Bearer ${await w.token(call.as)}`
  Object.assign(headers, call.headers)
  let body: BodyInit
  if (d.mediaType === 'application/json') {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(d.example)
  } else if (d.mediaType === 'application/x-www-form-urlencoded') {
    body = new URLSearchParams(d.example as Record<string, string>)
  } else if (d.mediaType === 'multipart/form-data') {
    const form = new FormData()
    for (const [name, value] of Object.entries((d.example as Record<string, string> | undefined) ?? {})) form.append(name, value)
    if (call.bytes) form.append('file', new Blob([new Uint8Array(call.bytes.body)], { type: call.bytes.contentType }), 'file')
    body = form
  } else {
    if (!call.bytes) throw new Error(`${d.key}: a ${d.mediaType} body needs bytes from the test`)
    headers['content-type'] = call.bytes.contentType
    body = new Uint8Array(call.bytes.body)
  }
  const res = await appFetch(url, { method: d.method.toUpperCase(), headers, body, redirect: 'manual' })
  const text = await res.text()
  let json: Record<string, unknown> | undefined
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: res.status, text, json }
}

/** Walks `steps` over the operations `scope` picks, on `svc`; returns the operations sent. */
async function walk(tap: Tap, svc: TestApp, scope: (d: Documented) => boolean): Promise<Set<Documented>> {
  const ops = withBodies(await fetchDocument(svc)).filter(scope)
  const w = newWalk(svc)
  const sent = new Set<Documented>()
  for (const step of steps) {
    const d = ops.find((o) => o.key === step.op)
    if (!d) continue
    sent.add(d)
    const name = `${d.op.operationId} (${d.method.toUpperCase()} ${d.path})`
    if (d.example === undefined && !bytesOnly[d.key]) {
      tap.fail(`${name} has no example`)
      continue
    }
    const call = (await step.prepare?.(w)) ?? {}
    const res = await send(w, d, call)
    const documented = Object.keys(d.op.responses ?? {}).filter((s) => /^2\d\d$/.test(s))
    const refused = step.expect?.(res)
    if (documented.includes(String(res.status)) && !refused) {
      tap.pass(`${name} → ${res.status}`)
      await step.after?.(w, res)
    } else {
      tap.fail(`${name} → ${res.status} (documented: ${documented.join(', ')})${refused ? `: ${refused}` : ''}: ${res.text.slice(0, 500)}`)
    }
  }
  return sent
}

let doc: OpenApiDocument
const sent = new Set<string>()
const id = (d: Pick<Documented, 'method' | 'path'>) => `${d.method.toUpperCase()} ${d.path}`

t.test('every operation under /api/auth and of ours, on a fresh service', async (t) => {
  const svc = await startExamplesApp(t)
  doc = await fetchDocument(svc)
  for (const d of await walk(t, svc, (d) => !isRootCopy(d.path, d.op))) sent.add(id(d))
  await svc.close()
})

t.test("the interface's root copies of Better Auth's operations, on another fresh service", async (t) => {
  const svc = await startExamplesApp(t)
  for (const d of await walk(t, svc, (d) => isRootCopy(d.path, d.op))) sent.add(id(d))
})

t.test('every operation that takes a body has an example, and was sent or is listed with its reason', async (t) => {
  const documented = withBodies(doc)
  t.ok(documented.length > 100, `${documented.length} operations take a body`)
  t.same(documented.filter((d) => d.example === undefined && !bytesOnly[d.key]).map(id), [], 'every body has an example (raw bytes aside)')
  for (const d of documented.filter((d) => bytesOnly[d.key])) t.equal(d.example, undefined, `${id(d)}: ${bytesOnly[d.key]}`)
  t.same(
    documented.filter((d) => !sent.has(id(d)) && !cannotSucceedHere[d.key]).map(id),
    [],
    'every operation with a body is in the walk (add a step to `steps`)',
  )
  t.same(documented.filter((d) => sent.has(id(d)) && cannotSucceedHere[d.key]).map(id), [], 'nothing listed as impossible was sent')
  const keys = new Set(documented.map((d) => d.key))
  t.same(
    [...Object.keys(cannotSucceedHere), ...Object.keys(bytesOnly)].filter((k) => !keys.has(k)),
    [],
    'every listed exception names an operation with a body',
  )
  t.same(
    steps.map((s) => s.op).filter((k) => !keys.has(k)),
    [],
    'every step names an operation with a body',
  )
  t.same(
    Object.keys(betterAuthExamples).filter((path) => !keys.has(`POST ${path}`)),
    [],
    'every Better Auth example is for one of its documented operations',
  )
})
