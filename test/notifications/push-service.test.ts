// The local push service the notification tests rely on must refuse what a real one refuses,
// or those tests could pass against a sender that signs nothing: each broken VAPID detail is
// answered 403, a wrong key for a bound subscription too, and a correct request is decrypted.
import t from 'tap'
import { request } from 'node:https'
import { readFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createECDH, createPrivateKey, sign } from 'node:crypto'
import webpush from 'web-push'
import { startPushService } from '../helpers/push-service.js'

const dir = await mkdtemp(join(tmpdir(), 'dps-push-self-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
const push = await startPushService(t, dir)
const ca = await readFile(push.caFile)
const vapid = webpush.generateVAPIDKeys()
const other = webpush.generateVAPIDKeys()

function post(endpoint: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(endpoint, { method: 'POST', headers, ca }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** A VAPID JWT signed with `privateKey` (base64url d of a P-256 key whose public key is `publicKey`). */
function jwt(
  payload: Record<string, unknown>,
  keys: { publicKey: string; privateKey: string },
  header: Record<string, unknown> = { typ: 'JWT', alg: 'ES256' },
): string {
  const pub = Buffer.from(keys.publicKey, 'base64url')
  const key = createPrivateKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      d: keys.privateKey,
      x: pub.subarray(1, 33).toString('base64url'),
      y: pub.subarray(33).toString('base64url'),
    },
    format: 'jwk',
  })
  const h = Buffer.from(JSON.stringify(header)).toString('base64url')
  const p = Buffer.from(JSON.stringify(payload)).toString('base64url')
  const s = sign('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')
  return `${h}.${p}.${s}`
}

t.test('a correct request from web-push is accepted and decrypted', async (t) => {
  const sub = push.subscribe('good', vapid.publicKey)
  const details = webpush.generateRequestDetails(sub, 'hello browser', {
    vapidDetails: { subject: 'mailto:a@example.com', publicKey: vapid.publicKey, privateKey: vapid.privateKey },
  })
  const status = await post(details.endpoint, details.headers as Record<string, string>, details.body as Buffer)
  t.equal(status, 201)
  const got = push.requestsFor('good')[0]!
  t.equal(got.vapidError, null)
  t.equal(got.plaintext, 'hello browser')
})

t.test('every broken VAPID detail is refused with 403', async (t) => {
  const now = Math.floor(Date.now() / 1000)
  const good = { aud: push.origin, exp: now + 3600, sub: 'mailto:a@example.com' }
  const sub = push.subscribe('strict', vapid.publicKey)
  const body = Buffer.from('x')
  const cases: Array<[string, Record<string, string>]> = [
    ['no Authorization', {}],
    ['another scheme', { authorization: `Bearer ${jwt(good, vapid)}` }],
    ['signed by another key than k', { authorization: `vapid t=${jwt(good, other)}, k=${vapid.publicKey}` }],
    ['a tampered signature', { authorization: `vapid t=${jwt(good, vapid).slice(0, -6)}AAAAAA, k=${vapid.publicKey}` }],
    [
      'aud of another origin',
      { authorization: `vapid t=${jwt({ ...good, aud: 'https://push.example.com' }, vapid)}, k=${vapid.publicKey}` },
    ],
    ['expired', { authorization: `vapid t=${jwt({ ...good, exp: now - 10 }, vapid)}, k=${vapid.publicKey}` }],
    ['exp more than 24 h ahead', { authorization: `vapid t=${jwt({ ...good, exp: now + 2 * 86400 }, vapid)}, k=${vapid.publicKey}` }],
    ['no sub', { authorization: `vapid t=${jwt({ aud: good.aud, exp: good.exp }, vapid)}, k=${vapid.publicKey}` }],
    ['alg none', { authorization: `vapid t=${jwt(good, vapid, { alg: 'none' })}, k=${vapid.publicKey}` }],
    [
      'a valid JWT of another key than the subscription was made with',
      { authorization: `vapid t=${jwt(good, other)}, k=${other.publicKey}` },
    ],
  ]
  for (const [what, headers] of cases) {
    t.equal(await post(sub.endpoint, { 'content-encoding': 'aes128gcm', ttl: '60', ...headers }, body), 403, what)
  }
  t.equal(push.requestsFor('strict').filter((r) => r.answered !== 403).length, 0, 'none got through')
})

t.test('a payload encrypted for other keys is not readable', async (t) => {
  const sub = push.subscribe('victim')
  const stranger = createECDH('prime256v1')
  const wrong = { ...sub, keys: { p256dh: stranger.generateKeys().toString('base64url'), auth: sub.keys.auth } }
  const details = webpush.generateRequestDetails(wrong, 'not for you', {
    vapidDetails: { subject: 'mailto:a@example.com', publicKey: vapid.publicKey, privateKey: vapid.privateKey },
  })
  await post(sub.endpoint, details.headers as Record<string, string>, details.body as Buffer)
  t.equal(push.requestsFor('victim')[0]!.plaintext, null, 'decryption fails with the real subscription keys')
})
