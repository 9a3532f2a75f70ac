// Unit tests of loadConfig: the one place that reads the environment.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { generateKeyPairSync } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import { z } from 'zod'
import { ConfigError, loadConfig, persistGenerated } from '../src/config.js'
import { sections } from '../src/config/sections.js'
import { type Variable, variablesOf } from '../src/config/variables.js'
import { startApp } from './helpers/app.js'
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
  t.equal(c.host, '127.0.0.1', 'loopback: a development machine serves only itself')
  t.equal(c.mqtt.host, '127.0.0.1', 'the MQTT listener binds HOST too')
  t.equal(c.baseUrl, 'http://localhost:3000', 'the loopback HOST is localhost in the public URL')
  t.equal(c.devices.mqttPublicUrl, 'mqtt://localhost:1883', 'devices are told the same host')
  t.same(c.warnings, [], 'no production checklist outside NODE_ENV=production')
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
  t.equal(loadConfig({ ...base, HOST: '0.0.0.0', PORT: '8080' }).baseUrl, 'http://localhost:8080', 'a wildcard HOST becomes localhost')
  for (const loopback of ['127.0.0.1', '::1', 'localhost', '127.0.1.1']) {
    const c = loadConfig({ ...base, HOST: loopback, PORT: '4000' })
    t.equal(c.baseUrl, 'http://localhost:4000', `loopback ${loopback} becomes localhost`)
    t.equal(c.passkey.rpId, 'localhost', 'a host passkeys accept (an IP address is not)')
  }
  t.equal(loadConfig({ ...base, HOST: '192.168.1.20', PORT: '4000' }).baseUrl, 'http://192.168.1.20:4000', 'a concrete HOST is kept')
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
  t.notOk(existsSync(dir), 'loading writes nothing')
  persistGenerated(first)
  t.ok(existsSync(file), 'the start step creates the folder and the secret file')
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
  t.notOk(existsSync(file), 'loading writes nothing')
  persistGenerated(first)
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

t.test('loading config creates nothing; a started app keeps what was generated and the next load reads it', async (t) => {
  const root = await tempDir(t)
  const dir = join(root, 'fresh')
  const loaded = loadConfig({ DATA_DIR: dir })
  t.notOk(existsSync(dir), 'a fresh DATA_DIR does not exist after loading config')
  t.same(loaded.generated.map((g) => g.name).sort(), ['auth-secret', 'broker-id', 'firmware-signing-key'], 'generated in memory')
  t.notOk(existsSync(dir), 'nor after reading the generated values')
  // The test helper puts the database template in place first, so the folder exists (empty of the files).
  await mkdir(dir)
  const { config, close } = await startApp(t, { dataDir: dir })
  await close()
  for (const name of ['auth-secret', 'broker-id', 'firmware-signing-key']) {
    t.equal(statSync(join(dir, name)).mode & 0o077, 0, `the started app wrote ${name}, readable by its owner only`)
  }
  const again = loadConfig({ DATA_DIR: dir })
  t.same(again.generated, [], 'the next load generates nothing')
  t.equal(again.authSecret, config.authSecret, 'the same auth secret')
  t.equal(again.nodeId, config.nodeId, 'the same broker id')
  t.equal(again.firmware.publicKey, config.firmware.publicKey, 'the same firmware signing key')
})

t.test('two starts on one fresh DATA_DIR: one writes, the other refuses instead of using another value', async (t) => {
  const dir = join(await tempDir(t), 'data')
  const a = loadConfig({ DATA_DIR: dir })
  const b = loadConfig({ DATA_DIR: dir })
  t.not(a.authSecret, b.authSecret, 'each generated its own')
  persistGenerated(a)
  t.throws(
    () => persistGenerated(b),
    /broker-id was written by another process starting on the same DATA_DIR at the same time: start again/,
  )
  t.doesNotThrow(() => persistGenerated(a), 'writing the same values again is fine (a second app on one config)')
  const restarted = loadConfig({ DATA_DIR: dir })
  t.equal(restarted.authSecret, a.authSecret, 'starting again uses what the first wrote')
  t.equal(restarted.nodeId, a.nodeId)
  const empty = join(await tempDir(t), 'data')
  await mkdir(empty)
  writeFileSync(join(empty, 'auth-secret'), '')
  expectConfigError(t, { DATA_DIR: empty }, /auth-secret is empty/)
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
  // Fastify 5 takes a hop count but trusts no proxy with it: refused rather than silently ignored.
  expectConfigError(t, { DATA_DIR: dir, AUTH_SECRET: SECRET, TRUST_PROXY: '1' }, /TRUST_PROXY: a hop count \(1\) is not supported/)
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

t.test('MQTT listener addresses: MQTT_HOST for TCP, MQTT_TLS_HOST for TLS, each defaulting to the one before', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET }
  const tls = { MQTT_TLS_CERT: '/etc/dps/cert.pem', MQTT_TLS_KEY: '/etc/dps/key.pem' }
  const lan = loadConfig({ ...base, HOST: '0.0.0.0', ...tls })
  t.equal(lan.mqtt.host, '0.0.0.0', 'HOST when MQTT_HOST is unset')
  t.equal(lan.mqtt.tls?.host, '0.0.0.0', 'and MQTT_HOST when MQTT_TLS_HOST is unset')
  const proxied = loadConfig({ ...base, MQTT_HOST: '0.0.0.0' })
  t.equal(proxied.host, '127.0.0.1', 'HTTP stays on loopback behind a local proxy')
  t.equal(proxied.mqtt.host, '0.0.0.0', 'while devices on the network reach MQTT')
  const tlsOnly = loadConfig({ ...base, MQTT_TLS_HOST: '::', ...tls })
  t.equal(tlsOnly.mqtt.host, '127.0.0.1', 'plain MQTT stays local')
  t.same(tlsOnly.mqtt.tls, { port: 8883, host: '::', certFile: '/etc/dps/cert.pem', keyFile: '/etc/dps/key.pem' })
})

t.test('the MQTT URL devices are given: mqtts on the TLS port once TLS is configured, unless MQTT_PUBLIC_URL says', async (t) => {
  const dir = await tempDir(t)
  const base = { DATA_DIR: dir, AUTH_SECRET: SECRET, BASE_URL: 'https://frames.example.com' }
  const tls = { MQTT_TLS_CERT: '/etc/dps/cert.pem', MQTT_TLS_KEY: '/etc/dps/key.pem' }
  t.equal(loadConfig(base).devices.mqttPublicUrl, 'mqtt://frames.example.com:1883')
  t.equal(loadConfig({ ...base, ...tls }).devices.mqttPublicUrl, 'mqtts://frames.example.com:8883')
  t.equal(loadConfig({ ...base, ...tls, MQTT_TLS_PORT: '9883' }).devices.mqttPublicUrl, 'mqtts://frames.example.com:9883')
  const given = loadConfig({ ...base, ...tls, MQTT_PUBLIC_URL: 'mqtt://10.0.0.5:1883' })
  t.equal(given.devices.mqttPublicUrl, 'mqtt://10.0.0.5:1883')
  t.equal(given.devices.mqttPublicUrlIsDefault, false)
  expectConfigError(t, { ...base, MQTT_TLS_CERT: '/etc/dps/cert.pem' }, /MQTT_TLS_CERT and MQTT_TLS_KEY must be set together/)
})

/** Everything the production checklist asks for. */
const PRODUCTION = {
  NODE_ENV: 'production',
  AUTH_SECRET: SECRET,
  BASE_URL: 'https://frames.example.com',
  TRUST_PROXY: '127.0.0.1',
  MQTT_TLS_HOST: '0.0.0.0',
  MQTT_TLS_CERT: '/etc/dps/cert.pem',
  MQTT_TLS_KEY: '/etc/dps/key.pem',
  SMTP_URL: 'smtp://mail.example.com:587',
  ADMIN_EMAILS: 'ops@example.com',
  DEMO_ENABLED: 'false',
}

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (err) {
    if (err instanceof ConfigError) return err.message
    throw err
  }
  return ''
}

t.test('NODE_ENV=production: a complete checklist starts without a warning', async (t) => {
  const dir = await tempDir(t)
  const c = loadConfig({ DATA_DIR: dir, ...PRODUCTION })
  t.same(c.warnings, [])
  t.equal(c.host, '127.0.0.1', 'HTTP behind the proxy on this machine')
  t.equal(c.devices.mqttPublicUrl, 'mqtts://frames.example.com:8883')
  t.notOk(existsSync(join(dir, 'auth-secret')), 'no secret generated')
})

t.test('NODE_ENV=production refuses to start without AUTH_SECRET and BASE_URL, naming each', async (t) => {
  const dir = await tempDir(t)
  const { AUTH_SECRET: _s, BASE_URL: _b, ...rest } = PRODUCTION
  const message = refusal({ DATA_DIR: dir, ...rest })
  t.match(message, /^Refusing to start with NODE_ENV=production/)
  t.match(message, /\n {2}AUTH_SECRET is not set/)
  t.match(message, /\n {2}BASE_URL is not set/)
  t.notOk(existsSync(join(dir, 'auth-secret')), 'nothing was generated for a start that did not happen')
  t.match(refusal({ DATA_DIR: dir, ...PRODUCTION, AUTH_SECRET: 'short' }), /AUTH_SECRET must be at least 32 characters/)
  t.match(
    refusal({ DATA_DIR: dir, ...PRODUCTION, DEVICE_AUTO_APPROVE_USER_EMAIL: 'a@example.com' }),
    /DEVICE_AUTO_APPROVE_USER_EMAIL is for development only/,
  )
  t.equal(refusal({ DATA_DIR: dir, ...rest, NODE_ENV: 'development' }), '', 'only in production')
})

t.test('NODE_ENV=production refuses an http BASE_URL unless ALLOW_HTTP_BASE_URL=true', async (t) => {
  const dir = await tempDir(t)
  const lan = { DATA_DIR: dir, ...PRODUCTION, BASE_URL: 'http://frames.lan:3000' }
  t.match(refusal(lan), /BASE_URL is http:\/\/frames\.lan:3000, not https.*ALLOW_HTTP_BASE_URL=true/)
  const allowed = loadConfig({ ...lan, ALLOW_HTTP_BASE_URL: 'true', HOST: '0.0.0.0', TRUST_PROXY: '' })
  t.equal(allowed.baseUrl, 'http://frames.lan:3000')
  t.same(allowed.warnings, [], 'a trusted LAN served directly: nothing to say')
  expectConfigError(t, { ...lan, ALLOW_HTTP_BASE_URL: 'yes' }, /ALLOW_HTTP_BASE_URL/)
})

t.test('NODE_ENV=production warns, and still starts, for what is only unusual', async (t) => {
  const dir = await tempDir(t)
  const warned = (env: Record<string, string>) => loadConfig({ DATA_DIR: dir, ...PRODUCTION, ...env }).warnings.join('\n')
  t.match(warned({ SMTP_URL: '' }), /SMTP_URL is not set: e-mails .* only written to DATA_DIR\/outbox/)
  t.match(warned({ TRUSTED_ORIGINS: 'https://app.example.com,http://localhost:5173' }), /TRUSTED_ORIGINS lists http:\/\/localhost:5173:/)
  t.notMatch(warned({ TRUSTED_ORIGINS: 'https://app.example.com' }), /TRUSTED_ORIGINS/, 'an https origin is fine')
  t.match(warned({ TRUST_PROXY: '' }), /TRUST_PROXY is not set although BASE_URL is https/)
  t.match(
    warned({ TRUST_PROXY: '', BASE_URL: 'http://frames.lan:3000', ALLOW_HTTP_BASE_URL: 'true' }),
    /HOST is 127\.0\.0\.1: only this machine reaches the HTTP API/,
  )
  t.match(warned({ MQTT_TLS_HOST: '' }), /MQTT listens on 127\.0\.0\.1 only.*MQTT_TLS_HOST=0\.0\.0\.0/)
  t.match(warned({ MQTT_TLS_CERT: '', MQTT_TLS_KEY: '', MQTT_HOST: '0.0.0.0' }), /devices connect over plain MQTT/)
  t.notMatch(
    warned({ MQTT_TLS_CERT: '', MQTT_TLS_KEY: '', MQTT_PUBLIC_URL: 'mqtts://frames.example.com:8883' }),
    /plain MQTT|MQTT listens/,
    'TLS ended by something else in front, named by MQTT_PUBLIC_URL',
  )
  t.match(warned({ DEMO_ENABLED: 'true' }), /DEMO_ENABLED is true/)
  t.match(warned({ ADMIN_EMAILS: '' }), /ADMIN_EMAILS is empty/)
})

/** A value each declared variable refuses, from what its schema accepts; free text (a name, a secret) has none. */
function refusedValue(v: Variable): string | undefined {
  const special: Record<string, string> = {
    TRUST_PROXY: '2',
    PGLITE_SHARED_BUFFERS: '32',
    REDIS_PREFIX: 'dps#',
    MQTT_BROKER_ID: 'node one',
    VAPID_SUBJECT: 'ops@example.com',
  }
  if (special[v.name]) return special[v.name]
  const s = z.toJSONSchema(v.schema, { io: 'input', unrepresentable: 'any' }) as Record<string, any>
  if (s.enum) return 'surely-not-allowed'
  if (s.type === 'integer') return '1.5'
  if (s.type === 'number') return 'twelve'
  if (s.format === 'uri') return 'not a url'
  if (s.format === 'email') return 'nobody'
  if (s.minLength) return 'x'.repeat(s.minLength - 1)
  if (s.pattern) throw new Error(`${v.name}: give the test a value its pattern refuses`)
  return undefined
}

t.test('every declared variable refuses a bad value with a ConfigError naming that variable alone', async (t) => {
  const dir = await tempDir(t)
  const all = Object.values(sections).flatMap((s) => variablesOf(s.variables))
  t.same(
    all.map((v) => v.name).filter((name, i, names) => names.indexOf(name) !== i),
    [],
    'no variable is declared twice',
  )
  let checked = 0
  for (const v of all) {
    const bad = refusedValue(v)
    if (bad === undefined) continue
    checked++
    let message = ''
    try {
      loadConfig({ DATA_DIR: dir, AUTH_SECRET: SECRET, [v.name]: bad })
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      message = err.message
    }
    const lines = message.split('\n').slice(1)
    t.ok(
      lines.length > 0 && lines.every((l) => l.startsWith(`  ${v.name}: `)),
      `${v.name}=${JSON.stringify(bad)} is refused, naming ${v.name}: ${JSON.stringify(message)}`,
    )
  }
  t.ok(checked > 70, `${checked} of ${all.length} variables have a value they refuse, and refuse it`)
})

t.test('loading config writes nothing anywhere: a process denied every file write loads it', async (t) => {
  const root = await tempDir(t)
  const fresh = join(root, 'fresh')
  // Node's permission model makes any file write throw ERR_ACCESS_DENIED (tsx's transform cache is
  // turned off so the loader itself writes nothing); the child then tries one write of its own, so
  // the test cannot pass with the denial missing.
  const script = `
    import { writeFileSync } from 'node:fs'
    const { loadConfig } = await import(${JSON.stringify(pathToFileURL(resolve('src/config.ts')).href)})
    const loaded = [
      loadConfig({ DATA_DIR: ${JSON.stringify(fresh)} }),
      loadConfig({ DATA_DIR: 'relative/data', MQTT_PORT: '1999', LOG_FORMAT: 'json' }),
      loadConfig({ DATA_DIR: ${JSON.stringify(fresh)}, NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(32), BASE_URL: 'https://a.example' }),
    ]
    let denied = ''
    try { writeFileSync(${JSON.stringify(join(root, 'probe'))}, 'x') } catch (err) { denied = err.code }
    console.log(JSON.stringify({ generated: loaded.map((c) => c.generated.map((g) => g.name)), denied }))
  `
  // Through env(1): the test runner adds its hooks to every child's NODE_OPTIONS, and the
  // permission model would refuse them; the child gets only what it needs.
  const child = spawnSync(
    'env',
    [
      '-i',
      `PATH=${process.env.PATH}`,
      `TMPDIR=${root}`,
      'TSX_DISABLE_CACHE=1',
      process.execPath,
      '--experimental-permission',
      '--allow-fs-read=*',
      // tsx transforms in a worker thread with esbuild's service process.
      '--allow-worker',
      '--allow-child-process',
      '--no-warnings',
      `--import=${import.meta.resolve('tsx')}`,
      '--input-type=module',
      '--eval',
      script,
    ],
    { cwd: root, encoding: 'utf8' },
  )
  t.equal(child.status, 0, `the child loaded config without writing: ${child.stderr}`)
  const out = child.status === 0 ? JSON.parse(child.stdout.trim().split('\n').at(-1)!) : {}
  t.equal(out.denied, 'ERR_ACCESS_DENIED', 'a write in that process is refused')
  t.same(out.generated[0], ['broker-id', 'auth-secret', 'firmware-signing-key'], 'values were generated, in memory only')
  t.same(readdirSync(root), [], 'nothing appeared in the working directory or the temporary folder')
})
