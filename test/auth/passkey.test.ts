// Passkeys: registration options for a signed-in user, then a full registration and sign-in with
// a software authenticator (ES256 key from node:crypto, attestation "none", CBOR built here).
import t from 'tap'
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail, type Client } from '../helpers/client.js'
import { appFetch } from '../helpers/app-fetch.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const RP_NAME = 'Pairing Test RP'
let svc: TestApp

t.before(async () => {
  svc = await startApp(t, { env: { PASSKEY_RP_NAME: RP_NAME } })
})

// ---------- a minimal CBOR encoder (major types 0-5), enough for WebAuthn structures ----------

type Cbor = number | string | Uint8Array | Cbor[] | Map<number | string, Cbor>

function cborHead(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n])
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n])
  if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff])
  const b = Buffer.alloc(5)
  b[0] = (major << 5) | 26
  b.writeUInt32BE(n, 1)
  return b
}

function cbor(value: Cbor): Buffer {
  if (typeof value === 'number') return value >= 0 ? cborHead(0, value) : cborHead(1, -1 - value)
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8')
    return Buffer.concat([cborHead(3, bytes.length), bytes])
  }
  if (value instanceof Uint8Array) return Buffer.concat([cborHead(2, value.length), value])
  if (Array.isArray(value)) return Buffer.concat([cborHead(4, value.length), ...value.map(cbor)])
  return Buffer.concat([cborHead(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])])
}

// ---------- a software authenticator ----------

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest()
const b64url = (data: Buffer) => data.toString('base64url')

class SoftAuthenticator {
  readonly credentialId = randomBytes(32)
  private readonly privateKey: KeyObject
  private readonly publicJwk: { x: string; y: string }
  private counter = 0

  constructor(
    private readonly rpId: string,
    private readonly origin: string,
  ) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    this.privateKey = privateKey
    this.publicJwk = publicKey.export({ format: 'jwk' }) as { x: string; y: string }
  }

  get id(): string {
    return b64url(this.credentialId)
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, origin = this.origin): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }))
  }

  private authData(flags: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4)
    count.writeUInt32BE(this.counter)
    return Buffer.concat([sha256(this.rpId), Buffer.from([flags]), count, ...(attested ? [attested] : [])])
  }

  /** navigator.credentials.create() with attestation "none", as RegistrationResponseJSON. */
  create(challenge: string, opts: { origin?: string } = {}) {
    const coseKey = new Map<number, Cbor>([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, Buffer.from(this.publicJwk.x, 'base64url')],
      [-3, Buffer.from(this.publicJwk.y, 'base64url')],
    ])
    const idLength = Buffer.alloc(2)
    idLength.writeUInt16BE(this.credentialId.length)
    const attested = Buffer.concat([Buffer.alloc(16) /* AAGUID */, idLength, this.credentialId, cbor(coseKey)])
    // Flags: user present (0x01), user verified (0x04), attested credential data (0x40).
    const authData = this.authData(0x45, attested)
    const attestationObject = cbor(
      new Map<string, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    )
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(this.clientData('webauthn.create', challenge, opts.origin)),
        attestationObject: b64url(attestationObject),
        transports: ['internal'],
      },
    }
  }

  /** navigator.credentials.get(), as AuthenticationResponseJSON. */
  get(challenge: string, opts: { origin?: string; key?: KeyObject } = {}) {
    this.counter += 1
    const authenticatorData = this.authData(0x05)
    const clientDataJSON = this.clientData('webauthn.get', challenge, opts.origin)
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientDataJSON)]), opts.key ?? this.privateKey)
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authenticatorData),
        signature: b64url(signature),
      },
    }
  }
}

// ---------- helpers ----------

type CreationOptions = {
  challenge: string
  rp: { id: string; name: string }
  user: { id: string; name: string; displayName: string }
  pubKeyCredParams: Array<{ type: string; alg: number }>
  excludeCredentials: Array<{ id: string; type: string; transports?: string[] }>
  attestation: string
  authenticatorSelection: Record<string, unknown>
  timeout: number
}
type RequestOptions = { challenge: string; rpId: string; allowCredentials?: Array<{ id: string; type: string }>; userVerification: string }
type PasskeyRow = {
  id: string
  name?: string
  credentialID: string
  userId: string
  deviceType: string
  backedUp: boolean
  transports?: string
  createdAt: string
}

async function registerOptions(client: Client): Promise<CreationOptions> {
  const res = await client.$fetch<CreationOptions>('/passkey/generate-register-options', { method: 'GET' })
  if (res.error) throw new Error(`generate-register-options: ${res.error.status} ${res.error.message}`)
  return res.data
}

async function listPasskeys(client: Client): Promise<PasskeyRow[]> {
  const res = await client.passkey.listUserPasskeys()
  if (res.error) throw new Error(`list-user-passkeys: ${res.error.status} ${res.error.message}`)
  return res.data as unknown as PasskeyRow[]
}

async function expectError(t: Test, res: Response, status: number, code?: string) {
  t.equal(res.status, status, `status ${status}`)
  const body = (await res.json()) as { message: unknown; code: unknown }
  t.type(body.message, 'string')
  t.type(body.code, 'string')
  if (code) t.equal(body.code, code)
}

const b64urlPattern = /^[A-Za-z0-9_-]+$/
/** The machine-readable code of a client error ($fetch types leave it out). */
const codeOf = (err: unknown) => (err as { code?: string } | null)?.code

// ---------- tests ----------

t.test('registration options for a signed-in user', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('passkey-opts')
  await signUp(client, email, 'correct-horse-battery', 'Passkey Person')

  const opts = await registerOptions(client)
  t.equal(opts.rp.name, RP_NAME, 'the configured RP name')
  t.equal(opts.rp.id, svc.config.passkey.rpId, 'the configured RP id')
  t.equal(opts.rp.id, new URL(svc.url).hostname, 'derived from the public URL')
  t.match(opts.challenge, b64urlPattern, 'a base64url challenge')
  t.ok(Buffer.from(opts.challenge, 'base64url').length >= 16, 'of at least 16 bytes')
  t.equal(opts.user.name, email, 'the authenticator shows the account e-mail')
  t.equal(opts.user.displayName, email)
  t.match(opts.user.id, b64urlPattern)
  t.ok(
    opts.pubKeyCredParams.some((p) => p.type === 'public-key' && p.alg === -7),
    'ES256 offered',
  )
  t.same(opts.excludeCredentials, [], 'nothing to exclude yet')
  t.equal(opts.attestation, 'none')
  t.match(opts.authenticatorSelection, { residentKey: 'preferred', userVerification: 'preferred' })
  t.type(opts.timeout, 'number')

  const again = await registerOptions(client)
  t.not(again.challenge, opts.challenge, 'every call gets a fresh challenge')

  t.same(await listPasskeys(client), [], 'list-user-passkeys is empty')
})

t.test('unauthenticated calls are 401 {message, code}', async (t) => {
  await expectError(t, await appFetch(`${svc.url}/api/auth/passkey/generate-register-options`), 401)
  await expectError(t, await appFetch(`${svc.url}/api/auth/passkey/list-user-passkeys`), 401)
  await expectError(
    t,
    await appFetch(`${svc.url}/api/auth/passkey/generate-register-options`, { headers: { authorization: 'Bearer not-a-session' } }),
    401,
  )
  const verify = await appFetch(`${svc.url}/api/auth/passkey/verify-registration`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ response: {} }),
  })
  await expectError(t, verify, 401)
  const del = await appFetch(`${svc.url}/api/auth/passkey/delete-passkey`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: svc.url },
    body: JSON.stringify({ id: 'whatever' }),
  })
  await expectError(t, del, 401)
})

t.test('full registration and sign-in with a software authenticator', async (t) => {
  const { client } = makeClient(svc.url)
  const email = uniqueEmail('passkey-full')
  const { userId } = await signUp(client, email, 'correct-horse-battery', 'Key Holder')
  const authenticator = new SoftAuthenticator(svc.config.passkey.rpId, svc.url)

  // A response for another origin is refused and stores nothing.
  const wrongOrigin = await registerOptions(client)
  const refused = await client.$fetch('/passkey/verify-registration', {
    method: 'POST',
    body: { response: authenticator.create(wrongOrigin.challenge, { origin: 'https://evil.example' }), name: 'evil' },
  })
  t.ok(refused.error, 'a response for another origin is refused')
  // Better Auth answers this with a 500; our mount turns it into the client error it is.
  t.equal(codeOf(refused.error), 'FAILED_TO_VERIFY_REGISTRATION')
  t.equal((refused.error as { status?: number }).status, 400, 'a 400, not a 500')
  t.same(await listPasskeys(client), [], 'and stores nothing')

  // The real ceremony.
  const opts = await registerOptions(client)
  const registered = await client.$fetch<PasskeyRow>('/passkey/verify-registration', {
    method: 'POST',
    body: { response: authenticator.create(opts.challenge), name: 'Test laptop' },
  })
  t.equal(registered.error, null, 'verify-registration accepts the attestation')
  t.equal(registered.data?.credentialID, authenticator.id)
  t.equal(registered.data?.userId, userId)
  t.equal(registered.data?.name, 'Test laptop')

  // The challenge is single-use: replaying the same response is refused.
  const replay = await client.$fetch('/passkey/verify-registration', {
    method: 'POST',
    body: { response: authenticator.create(opts.challenge), name: 'replay' },
  })
  t.equal(replay.error?.status, 400, 'a replayed registration is refused')
  t.equal(codeOf(replay.error), 'CHALLENGE_NOT_FOUND')

  const list = await listPasskeys(client)
  t.equal(list.length, 1, 'one passkey listed')
  t.match(list[0], {
    name: 'Test laptop',
    credentialID: authenticator.id,
    userId,
    deviceType: 'singleDevice',
    backedUp: false,
    transports: 'internal',
  })
  const next = await registerOptions(client)
  t.same(
    next.excludeCredentials.map((c) => c.id),
    [authenticator.id],
    'the registered key is excluded from the next registration',
  )

  // Sign in with it from a fresh browser (no session).
  const { client: fresh } = makeClient(svc.url)
  const auth = await fresh.$fetch<RequestOptions>('/passkey/generate-authenticate-options', { method: 'GET' })
  t.equal(auth.error, null)
  t.equal(auth.data!.rpId, svc.config.passkey.rpId)
  t.match(auth.data!.challenge, b64urlPattern)

  // A signature by another key is refused.
  const forged = await fresh.$fetch('/passkey/verify-authentication', {
    method: 'POST',
    body: { response: authenticator.get(auth.data!.challenge, { key: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey }) },
  })
  t.equal(forged.error?.status, 401, 'a forged signature is refused')
  t.equal(codeOf(forged.error), 'AUTHENTICATION_FAILED')

  const auth2 = await fresh.$fetch<RequestOptions>('/passkey/generate-authenticate-options', { method: 'GET' })
  const assertion = authenticator.get(auth2.data!.challenge)
  const signedIn = await fresh.$fetch<{ session: { token: string; userId: string }; user: { id: string; email: string } }>(
    '/passkey/verify-authentication',
    {
      method: 'POST',
      body: { response: assertion },
    },
  )
  t.equal(signedIn.error, null, 'verify-authentication accepts the assertion')
  t.equal(signedIn.data?.user.id, userId)
  t.equal(signedIn.data?.user.email, email)
  const token = signedIn.data!.session.token

  // The session is a real one: the cookie jar and the bearer token both work.
  const viaCookie = await fresh.getSession()
  t.equal(viaCookie.data?.user.email, email, 'signed in through the passkey')
  const viaBearer = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(viaBearer.status, 200)
  t.equal(((await viaBearer.json()) as { user: { id: string } }).user.id, userId)

  // The same assertion cannot be replayed.
  const replayed = await fresh.$fetch('/passkey/verify-authentication', { method: 'POST', body: { response: assertion } })
  t.equal(replayed.error?.status, 400)
  t.equal(codeOf(replayed.error), 'CHALLENGE_NOT_FOUND')

  // Rename and delete through the official client.
  const id = list[0]!.id
  const renamed = await client.passkey.updatePasskey({ id, name: 'Work laptop' })
  t.equal(renamed.error, null)
  t.equal((await listPasskeys(client))[0]?.name, 'Work laptop')
  // Another account cannot delete it.
  const { client: stranger } = makeClient(svc.url)
  await signUp(stranger, uniqueEmail('passkey-stranger'))
  const stolen = await stranger.passkey.deletePasskey({ id })
  t.ok(stolen.error, 'another account cannot delete the passkey')
  t.equal((await listPasskeys(client)).length, 1)
  const deleted = await client.passkey.deletePasskey({ id })
  t.equal(deleted.error, null)
  t.same(await listPasskeys(client), [], 'deleted')

  // A deleted passkey no longer signs in.
  const auth3 = await fresh.$fetch<RequestOptions>('/passkey/generate-authenticate-options', { method: 'GET' })
  const gone = await fresh.$fetch('/passkey/verify-authentication', {
    method: 'POST',
    body: { response: authenticator.get(auth3.data!.challenge) },
  })
  t.equal(gone.error?.status, 401)
  t.equal(codeOf(gone.error), 'PASSKEY_NOT_FOUND')
})
