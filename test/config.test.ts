// Unit tests of loadConfig: the one place that reads the environment.
import t from 'tap'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { generateKeyPairSync } from 'node:crypto'
import { ConfigError, loadConfig } from '../src/config.js'
import { newSigningKeyPem, publicKeyOf, readSigningKey } from '../src/firmware/signing.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'dps-config-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

// A fixed secret keeps most cases from touching the disk.
const SECRET = 'x'.repeat(32)

function expectConfigError(t: Test, env: Record<string, string>, variable: string | RegExp) {
  let caught: unknown
  try {
    loadConfig(env)
  } catch (err) {
    caught = err
  }
  t.ok(caught instanceof ConfigError, `ConfigError for ${JSON.stringify(env)}`)
  const err = caught as ConfigError
  t.equal(err?.name, 'ConfigError')
  t.match(err?.message, variable, 'the message names the variable')
}

t.test('defaults', async (t) => {
  const dir = await tempDir(t)
  const c = loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET })
  t.equal(c.port, 3000)
  t.equal(c.host, '0.0.0.0')
  t.equal(c.baseUrl, 'http://localhost:3000', 'a wildcard HOST becomes localhost in the public URL')
  t.equal(c.dataDir, dir)
  t.equal(c.databaseUrl, undefined, 'PGlite unless DATABASE_URL is set')
  t.equal(c.pgliteSharedBuffers, '32MB', "a smaller page cache than PGlite's 128MB")
  t.equal(c.redisUrl, undefined)
  t.equal(c.redisPrefix, 'dps:')
  t.equal(c.mqttPort, 1883)
  t.equal(c.authSecret, SECRET)
  t.same(c.adminEmails, [])
  t.same(c.trustedOrigins, [])
  t.same(c.cookieOrigins, ['http://localhost:3000'], 'only its own pages use the session cookie')
  t.equal(c.trustProxy, false, 'the socket address is used unless a proxy is trusted')
  t.equal(c.smtpUrl, undefined, 'mail goes to the outbox folder by default')
  t.equal(c.mailFrom, 'Display Pairing <no-reply@localhost>')
  t.equal(c.s3, undefined)
  t.equal(c.vapid, undefined)
  t.equal(c.logLevel, 'info')
  t.equal(c.bodyLimit, 1024 * 1024)
  t.same(c.rateLimit, { window: 60, max: 200, authWindow: 60, authMax: 5 })
  t.same(c.social, { google: undefined, github: undefined, apple: undefined })
  t.same(c.passkey, { rpId: 'localhost', rpName: 'Display Pairing' })
})

t.test('the MQTT limits reach the broker as set (their effect: test/broker/server-limits.test.ts)', async (t) => {
  const dir = await tempDir(t)
  const env = {
    MQTT_MAX_PACKET_SIZE: '4096',
    MQTT_CONNECT_RATE: '7',
    MQTT_KEEPALIVE_MAX: '600',
    MQTT_QUEUE_LIMIT: '3',
    MQTT_MAX_INFLIGHT: '2',
    MQTT_MAX_SUBSCRIPTIONS: '9',
    MQTT_INBOUND_RATE: '11',
    MQTT_INBOUND_BURST: '13',
  }
  t.same(loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET, ...env }).mqtt.limits, {
    maxPacketSize: 4096,
    connectRate: 7,
    connectWindowMs: 10_000,
    keepaliveLimit: 600,
    queueLimit: 3,
    maxInflight: 2,
    maxSubscriptions: 9,
    inboundRate: 11,
    inboundBurst: 13,
  })
})

t.test('LOG_FORMAT: readable lines on a terminal, JSON otherwise, or as set', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET }
  t.equal(loadConfig(base).logPretty, Boolean(process.stdout.isTTY), 'by whether stdout is a terminal')
  t.equal(loadConfig({ ...base, LOG_FORMAT: 'pretty' }).logPretty, true)
  t.equal(loadConfig({ ...base, LOG_FORMAT: 'json' }).logPretty, false)
  expectConfigError(t, { ...base, LOG_FORMAT: 'xml' }, /LOG_FORMAT/)
})

t.test('PGLITE_SHARED_BUFFERS is a PostgreSQL size', async (t) => {
  const dir = await tempDir(t)
  t.equal(loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET, PGLITE_SHARED_BUFFERS: '128MB' }).pgliteSharedBuffers, '128MB')
  for (const bad of ['32', '32 MB', '0MB', '32MB; drop table x', '-1MB'])
    expectConfigError(t, { DATA_DIR: dir, AUTH_SECRET: SECRET, PGLITE_SHARED_BUFFERS: bad }, /PGLITE_SHARED_BUFFERS/)
})

t.test('DATA_DIR defaults to ./data, resolved to an absolute path', async (t) => {
  // Every generated value given, so nothing is written into the checkout.
  const given = { AUTH_SECRET: SECRET, MQTT_BROKER_ID: 'node-test', FIRMWARE_SIGNING_KEY: newSigningKeyPem() }
  const c = loadConfig(given)
  t.equal(c.dataDir, resolve('./data'))
  const rel = loadConfig({ ...given, DATA_DIR: 'some/rel/dir' })
  t.notOk(existsSync(resolve('some')), 'nothing was written there')
  t.equal(rel.dataDir, resolve('some/rel/dir'))
})

t.test('BASE_URL derivation', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET }
  t.equal(loadConfig({ ...base, PORT: '8080' }).baseUrl, 'http://localhost:8080', 'from PORT')
  t.equal(loadConfig({ ...base, HOST: '::', PORT: '8080' }).baseUrl, 'http://localhost:8080', ':: is a wildcard too')
  t.equal(loadConfig({ ...base, HOST: '127.0.0.1', PORT: '4000' }).baseUrl, 'http://127.0.0.1:4000', 'a concrete HOST is kept')
  t.equal(loadConfig({ ...base, BASE_URL: 'https://pair.example.com/' }).baseUrl, 'https://pair.example.com', 'trailing slashes dropped')
  t.equal(loadConfig({ ...base, BASE_URL: 'https://pair.example.com/svc///' }).baseUrl, 'https://pair.example.com/svc')
  t.equal(loadConfig({ ...base, BASE_URL: '   ' }).baseUrl, 'http://localhost:3000', 'a blank BASE_URL counts as unset')
  const explicit = loadConfig({ ...base, BASE_URL: 'https://pair.example.com', PORT: '9999' })
  t.equal(explicit.baseUrl, 'https://pair.example.com', 'BASE_URL wins over PORT')
  t.equal(explicit.port, 9999)
  t.equal(explicit.passkey.rpId, 'pair.example.com', 'the passkey RP id follows the public host')
  t.equal(loadConfig({ ...base, BASE_URL: 'https://pair.example.com', PASSKEY_RP_ID: 'example.com' }).passkey.rpId, 'example.com')
  expectConfigError(t, { ...base, BASE_URL: 'not a url' }, /BASE_URL/)
})

t.test('invalid PORT is a ConfigError naming the variable', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET }
  for (const bad of ['abc', '-1', '65536', '80.5', '3000x']) {
    expectConfigError(t, { ...base, PORT: bad }, /PORT/)
  }
  expectConfigError(t, { ...base, MQTT_PORT: '70000' }, /MQTT_PORT/)
  expectConfigError(t, { ...base, REDIS_PREFIX: 'dps#' }, /REDIS_PREFIX/)
  expectConfigError(t, { ...base, REDIS_PREFIX: 'a+b:' }, /REDIS_PREFIX/)
  t.equal(loadConfig({ ...base, PORT: '0' }).port, 0, 'PORT=0 (pick a free port) is allowed')
  t.equal(loadConfig({ ...base, PORT: '65535' }).port, 65535)
})

t.test('other invalid values name their variable', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET }
  expectConfigError(t, { ...base, LOG_LEVEL: 'loud' }, /LOG_LEVEL/)
  expectConfigError(t, { ...base, BODY_LIMIT: '0' }, /BODY_LIMIT/)
  expectConfigError(t, { ...base, RATE_LIMIT_MAX: 'lots' }, /RATE_LIMIT_MAX/)
  expectConfigError(t, { ...base, RATE_LIMIT_AUTH_WINDOW: '-5' }, /RATE_LIMIT_AUTH_WINDOW/)
  expectConfigError(t, { ...base, DATABASE_URL: 'nope' }, /DATABASE_URL/)
  expectConfigError(t, { DATA_DIR: dir, AUTH_SECRET: 'too-short' }, /AUTH_SECRET/)
  // Several problems are reported together.
  let message = ''
  try {
    loadConfig({ ...base, PORT: 'x', LOG_LEVEL: 'y' })
  } catch (err) {
    message = (err as Error).message
  }
  t.match(message, /PORT/)
  t.match(message, /LOG_LEVEL/)
  const c = loadConfig({
    ...base,
    BODY_LIMIT: '2048',
    RATE_LIMIT_MAX: '7',
    RATE_LIMIT_WINDOW: '9',
    RATE_LIMIT_AUTH_MAX: '2',
    RATE_LIMIT_AUTH_WINDOW: '30',
  })
  t.equal(c.bodyLimit, 2048)
  t.same(c.rateLimit, { window: 9, max: 7, authWindow: 30, authMax: 2 })
})

t.test('AUTH_SECRET is generated once into DATA_DIR/auth-secret and reused', async (t) => {
  const root = await tempDir(t)
  const dir = join(root, 'nested', 'data')
  t.notOk(existsSync(dir))
  const first = loadConfig({ DATA_DIR: dir })
  const file = join(dir, 'auth-secret')
  t.ok(existsSync(file), 'the folder and the secret file are created')
  t.ok(first.authSecret.length >= 32, 'the generated secret is long enough')
  t.equal(readFileSync(file, 'utf8').trim(), first.authSecret, 'the file holds the secret')
  t.equal(statSync(file).mode & 0o077, 0, 'only the owner can read it')
  const second = loadConfig({ DATA_DIR: dir })
  t.equal(second.authSecret, first.authSecret, 'the next load reuses it')
  const other = await tempDir(t)
  t.not(loadConfig({ DATA_DIR: other }).authSecret, first.authSecret, 'another data folder gets its own secret')
  const explicit = loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET })
  t.equal(explicit.authSecret, SECRET, 'AUTH_SECRET wins over the file')
  t.equal(readFileSync(file, 'utf8').trim(), first.authSecret, 'and leaves the file alone')
  const noFile = await tempDir(t)
  loadConfig({ DATA_DIR: noFile, AUTH_SECRET: SECRET })
  t.notOk(existsSync(join(noFile, 'auth-secret')), 'no file is written when AUTH_SECRET is set')
})

t.test('the firmware signing key is generated once into DATA_DIR, or read from FIRMWARE_SIGNING_KEY', async (t) => {
  const dir = await tempDir(t)
  const first = loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET })
  const file = join(dir, 'firmware-signing-key')
  t.match(readFileSync(file, 'utf8'), /^-----BEGIN PRIVATE KEY-----/, 'a PKCS#8 PEM file')
  t.equal(statSync(file).mode & 0o077, 0, 'only the owner can read it')
  t.equal(Buffer.from(first.firmware.publicKey, 'base64').length, 32, 'its public half is a raw Ed25519 key')
  t.equal(loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET }).firmware.publicKey, first.firmware.publicKey, 'reused on the next load')
  const pem = newSigningKeyPem()
  const given = loadConfig({ DATA_DIR: await tempDir(t), AUTH_SECRET: SECRET, FIRMWARE_SIGNING_KEY: pem })
  t.equal(given.firmware.publicKey, publicKeyOf(readSigningKey(pem)), 'FIRMWARE_SIGNING_KEY wins')
  // One line in an environment file: the newlines written as \n.
  t.equal(
    loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET, FIRMWARE_SIGNING_KEY: pem.replace(/\n/g, '\\n') }).firmware.publicKey,
    given.firmware.publicKey,
  )
  expectConfigError(
    t,
    { DATA_DIR: dir, AUTH_SECRET: SECRET, FIRMWARE_SIGNING_KEY: 'not a key' },
    /FIRMWARE_SIGNING_KEY: not a PEM private key/,
  )
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  expectConfigError(t, { DATA_DIR: dir, AUTH_SECRET: SECRET, FIRMWARE_SIGNING_KEY: rsa }, /an Ed25519 key is needed, this one is rsa/)
})

t.test('ADMIN_EMAILS and TRUSTED_ORIGINS are trimmed lists; e-mails lower-cased', async (t) => {
  const dir = await tempDir(t)
  const c = loadConfig({
    DATA_DIR: dir,
    AUTH_SECRET: SECRET,
    ADMIN_EMAILS: ' Alice@Example.COM, bob@example.com ,,  ',
    TRUSTED_ORIGINS: 'https://app.example.com, http://localhost:5173',
  })
  t.same(c.adminEmails, ['alice@example.com', 'bob@example.com'])
  t.same(c.trustedOrigins, ['https://app.example.com', 'http://localhost:5173'])
  t.same(loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET, ADMIN_EMAILS: '' }).adminEmails, [])
})

t.test('TRUST_PROXY parsing', async (t) => {
  const dir = await tempDir(t)
  const tp = (v?: string) => loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET, ...(v === undefined ? {} : { TRUST_PROXY: v }) }).trustProxy
  t.equal(tp(), false, 'unset')
  t.equal(tp(''), false, 'empty')
  t.equal(tp('false'), false)
  t.equal(tp('true'), true)
  t.equal(tp('1'), 1, 'a hop count')
  t.equal(tp('2'), 2)
  t.same(tp('10.0.0.1'), ['10.0.0.1'], 'one address')
  t.same(tp('127.0.0.1, 10.0.0.0/8 ,'), ['127.0.0.1', '10.0.0.0/8'], 'a list of addresses and CIDRs')
})

t.test('VAPID keys must be set as a pair', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET }
  expectConfigError(t, { ...base, VAPID_PUBLIC_KEY: 'pub' }, /VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY/)
  expectConfigError(t, { ...base, VAPID_PRIVATE_KEY: 'priv' }, /VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY/)
  t.same(loadConfig({ ...base, VAPID_PUBLIC_KEY: 'pub', VAPID_PRIVATE_KEY: 'priv' }).vapid, {
    publicKey: 'pub',
    privateKey: 'priv',
    subject: 'mailto:admin@localhost',
  })
  t.same(
    loadConfig({ ...base, VAPID_PUBLIC_KEY: 'pub', VAPID_PRIVATE_KEY: 'priv', VAPID_SUBJECT: 'mailto:ops@example.com' }).vapid?.subject,
    'mailto:ops@example.com',
  )
  t.equal(loadConfig({ ...base, VAPID_SUBJECT: 'mailto:ops@example.com' }).vapid, undefined, 'a subject alone enables nothing')
})

t.test('optional services: social providers, S3, SMTP', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET }
  const c = loadConfig({
    ...base,
    GOOGLE_CLIENT_ID: 'gid',
    GOOGLE_CLIENT_SECRET: 'gsecret',
    GITHUB_CLIENT_ID: 'only-id',
    APPLE_CLIENT_ID: 'aid',
    APPLE_CLIENT_SECRET: 'asecret',
    APPLE_APP_BUNDLE_IDENTIFIER: 'com.example.app',
    S3_BUCKET: 'uploads',
    S3_ENDPOINT: 'http://127.0.0.1:9000',
    SMTP_URL: 'smtp://127.0.0.1:2525',
  })
  t.same(c.social.google, { clientId: 'gid', clientSecret: 'gsecret' })
  t.equal(c.social.github, undefined, 'a provider needs both id and secret')
  t.same(c.social.apple, { clientId: 'aid', clientSecret: 'asecret', appBundleIdentifier: 'com.example.app' })
  t.same(c.s3, {
    endpoint: 'http://127.0.0.1:9000',
    bucket: 'uploads',
    region: 'us-east-1',
    accessKeyId: undefined,
    secretAccessKey: undefined,
  })
  t.equal(c.smtpUrl, 'smtp://127.0.0.1:2525')
  expectConfigError(t, { ...base, SMTP_URL: 'not-a-url' }, /SMTP_URL/)
})

t.test('cookie origins: the public URL and the trusted origins, in the form an Origin header has', async (t) => {
  const dir = await tempDir(t)
  const c = loadConfig({
    DATA_DIR: dir,
    AUTH_SECRET: SECRET,
    BASE_URL: 'https://Frames.Example/app/',
    TRUSTED_ORIGINS: 'https://app.example/,http://localhost:5173',
  })
  t.same(c.cookieOrigins, ['https://frames.example', 'https://app.example', 'http://localhost:5173'])
})
