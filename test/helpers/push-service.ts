// A local Web Push service (RFC 8030) over HTTPS with a test certificate, as a browser vendor's
// push service would run it: it checks the VAPID JWT of each request (RFC 8292: ES256 signature
// with the key in `k`, aud = its origin, exp within 24 h) and decrypts the aes128gcm payload
// (RFC 8188 / RFC 8291) with the subscription's private key, so a test reads the plaintext a
// browser would show. Answers can be scripted per subscription (410, 429 with Retry-After, …).
import { createDecipheriv, createECDH, createPublicKey, hkdfSync, randomBytes, verify, type ECDH } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:https'
import { join } from 'node:path'
import { generate } from 'selfsigned'

type Tap = { teardown(fn: () => unknown): void }

type Answer = { status: number; headers?: Record<string, string>; body?: string }

type PushRequest = {
  subscription: string
  at: number
  headers: Record<string, string | undefined>
  body: Buffer
  /** The VAPID check: null when it passed, otherwise why it failed. */
  vapidError: string | null
  jwt?: { header: Record<string, unknown>; payload: { aud?: string; exp?: number; sub?: string } }
  /** The `k` parameter: the sender's VAPID public key. */
  vapidKey?: string
  /** The decrypted message, or null when decryption failed. */
  plaintext: string | null
  answered: number
}

export type TestSubscription = { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } }

type Keys = { ecdh: ECDH; publicKey: Buffer; auth: Buffer }

const b64u = (b: Buffer) => b.toString('base64url')

function p256PublicKey(raw: Buffer) {
  if (raw.length !== 65 || raw[0] !== 0x04) throw new Error('k is not an uncompressed P-256 point')
  return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33, 65)) }, format: 'jwk' })
}

/** RFC 8292 §2–3: `Authorization: vapid t=<JWT>, k=<public key>`. */
function checkVapid(authorization: string | undefined, origin: string): Pick<PushRequest, 'vapidError' | 'jwt' | 'vapidKey'> {
  const m = /^vapid\s+(.+)$/i.exec(authorization ?? '')
  if (!m) return { vapidError: 'no vapid authorization' }
  const params = Object.fromEntries(
    m[1]!.split(',').map(
      (p) =>
        p
          .trim()
          .split('=')
          .map((s) => s.trim()) as [string, string],
    ),
  )
  const token = params.t
  const k = params.k
  if (!token || !k) return { vapidError: 'missing t or k' }
  const [h, p, s] = token.split('.')
  if (!h || !p || !s) return { vapidError: 'malformed JWT' }
  const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>
  const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as { aud?: string; exp?: number; sub?: string }
  const jwt = { header, payload }
  if (header.alg !== 'ES256') return { vapidError: `alg ${String(header.alg)}`, jwt, vapidKey: k }
  let ok = false
  try {
    ok = verify(
      'sha256',
      Buffer.from(`${h}.${p}`),
      { key: p256PublicKey(Buffer.from(k, 'base64url')), dsaEncoding: 'ieee-p1363' },
      Buffer.from(s, 'base64url'),
    )
  } catch (err) {
    return { vapidError: `bad key: ${(err as Error).message}`, jwt, vapidKey: k }
  }
  if (!ok) return { vapidError: 'signature does not verify', jwt, vapidKey: k }
  if (payload.aud !== origin) return { vapidError: `aud ${payload.aud} is not ${origin}`, jwt, vapidKey: k }
  const now = Math.floor(Date.now() / 1000)
  if (typeof payload.exp !== 'number' || payload.exp <= now || payload.exp > now + 24 * 3600)
    return { vapidError: `exp ${payload.exp} not within 24 h`, jwt, vapidKey: k }
  if (!payload.sub || !/^(mailto:|https:)/.test(payload.sub)) return { vapidError: 'sub must be mailto: or https:', jwt, vapidKey: k }
  return { vapidError: null, jwt, vapidKey: k }
}

/** RFC 8291 §3.4 and RFC 8188 §2: one aes128gcm record, decrypted with the user agent's keys. */
function decryptAes128gcm(body: Buffer, keys: Keys): Buffer {
  const salt = body.subarray(0, 16)
  const rs = body.readUInt32BE(16)
  const idlen = body[20]!
  const serverKey = body.subarray(21, 21 + idlen)
  const record = body.subarray(21 + idlen)
  if (record.length > rs) throw new Error('more than one record')
  const ecdhSecret = keys.ecdh.computeSecret(serverKey)
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0', 'latin1'), keys.publicKey, serverKey])
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, keys.auth, keyInfo, 32))
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0', 'latin1'), 16))
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0', 'latin1'), 12))
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce)
  decipher.setAuthTag(record.subarray(record.length - 16))
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()])
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end -= 1
  if (padded[end] !== 0x02) throw new Error('last record must end with the 0x02 delimiter')
  return padded.subarray(0, end)
}

export type PushService = {
  origin: string
  /** PEM file of the test certificate, for the sender's PUSH_CA_FILE. */
  caFile: string
  received: PushRequest[]
  /**
   * A fresh browser subscription: a real P-256 key pair and a 16-byte auth secret. With
   * `serverKey` (the applicationServerKey the page subscribed with), requests signed with any
   * other VAPID key are refused, as push services do.
   */
  subscribe(name: string, serverKey?: string): TestSubscription
  /** Answers for the next requests to a subscription, in order; after them, 201. */
  script(name: string, answers: Answer[]): void
  /** Requests that reached one subscription's endpoint. */
  requestsFor(name: string): PushRequest[]
  /** Waits for the n-th request (1-based) to a subscription. */
  waitFor(name: string, n?: number, timeoutMs?: number): Promise<PushRequest>
}

export async function startPushService(t: Tap, dir: string): Promise<PushService> {
  const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' },
        ],
      },
    ],
  })
  const caFile = join(dir, 'push-ca.pem')
  await writeFile(caFile, pems.cert)

  const keys = new Map<string, Keys>()
  const boundKeys = new Map<string, string>()
  const scripts = new Map<string, Answer[]>()
  const received: PushRequest[] = []
  let origin = ''

  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const name = decodeURIComponent((req.url ?? '').replace(/^\/push\//, ''))
      const body = Buffer.concat(chunks)
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]))
      const vapid = checkVapid(req.headers.authorization, origin)
      const k = keys.get(name)
      let plaintext: string | null = null
      try {
        if (k && req.headers['content-encoding'] === 'aes128gcm') plaintext = decryptAes128gcm(body, k).toString('utf8')
      } catch {
        plaintext = null
      }
      const scripted = scripts.get(name)?.shift()
      let answer: Answer = scripted ?? { status: 201 }
      if (!k) answer = { status: 404, body: 'unknown subscription' }
      else if (vapid.vapidError) answer = { status: 403, body: vapid.vapidError }
      else if (boundKeys.has(name) && boundKeys.get(name) !== vapid.vapidKey)
        answer = { status: 403, body: 'VAPID key differs from the subscription key' }
      else if (req.method !== 'POST') answer = { status: 405 }
      received.push({ subscription: name, at: Date.now(), headers, body, ...vapid, plaintext, answered: answer.status })
      res.writeHead(answer.status, {
        ...(answer.status === 201 ? { location: `${origin}/message/${received.length}` } : {}),
        ...answer.headers,
      })
      res.end(answer.body ?? '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )

  const requestsFor = (name: string) => received.filter((r) => r.subscription === name)
  return {
    origin,
    caFile,
    received,
    subscribe(name, serverKey) {
      if (serverKey) boundKeys.set(name, serverKey)
      const ecdh = createECDH('prime256v1')
      const publicKey = ecdh.generateKeys()
      const auth = randomBytes(16)
      keys.set(name, { ecdh, publicKey, auth })
      return {
        endpoint: `${origin}/push/${encodeURIComponent(name)}`,
        expirationTime: null,
        keys: { p256dh: b64u(publicKey), auth: b64u(auth) },
      }
    },
    script(name, answers) {
      scripts.set(name, [...answers])
    },
    requestsFor,
    async waitFor(name, n = 1, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const got = requestsFor(name)
        if (got.length >= n) return got[n - 1]!
        if (Date.now() > deadline) throw new Error(`push service: no request #${n} for ${name} within ${timeoutMs} ms`)
        await new Promise((r) => setTimeout(r, 25))
      }
    },
  }
}
