// The one place that reads the environment. Everything else receives a validated Config.
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { availableParallelism } from 'node:os'
import { z } from 'zod'
import { publicKeyOf, readSigningKey, newSigningKeyPem } from './firmware/signing.js'
import { isLoopbackHost, productionChecks } from './production-checks.js'

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

const csv = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )

const optionalUrl = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : undefined))
  .pipe(z.string().url().optional())

/** A value where blank (an empty line in an environment file) means unset. */
const optionalText = z
  .string()
  .optional()
  .transform((v) => v?.trim() || undefined)

/** Browsers' push services (Chrome/FCM, Firefox, Edge/WNS, Safari). Endpoints elsewhere are refused. */
const defaultPushHosts =
  'fcm.googleapis.com,android.googleapis.com,updates.push.services.mozilla.com,.push.services.mozilla.com,.notify.windows.com,.push.apple.com'

/** An image provider's API base: http(s), blank means the default, kept without a trailing slash. */
const providerBaseUrl = (fallback: string) =>
  z.preprocess(
    (v) => (typeof v === 'string' && !v.trim() ? undefined : v),
    z
      .string()
      .trim()
      .url()
      .refine((v) => /^https?:\/\//i.test(v), 'must be an http(s) URL')
      .default(fallback)
      .transform((v) => v.replace(/\/+$/, '')),
  )

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback)

const envSchema = z.object({
  PORT: port(3000),
  // Loopback: a development machine serves only itself until told otherwise (docs/deployment.md).
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  BASE_URL: optionalUrl,
  // NODE_ENV=production refuses an http BASE_URL unless this says the network is trusted.
  ALLOW_HTTP_BASE_URL: z.enum(['true', 'false']).default('false'),
  DATA_DIR: z.string().default('./data'),
  DATABASE_URL: optionalUrl,
  // The embedded database's page cache (PostgreSQL's shared_buffers; PGlite's own default is 128MB).
  PGLITE_SHARED_BUFFERS: z
    .string()
    .regex(/^[1-9]\d*(kB|MB|GB)$/, 'PGLITE_SHARED_BUFFERS is a size such as 32MB')
    .default('32MB'),
  REDIS_URL: optionalUrl,
  // Also the start of the broker's pub/sub topics, where + and # would be wildcards.
  REDIS_PREFIX: z
    .string()
    .regex(/^[^+#]*$/, 'REDIS_PREFIX may not contain + or #')
    .default('dps:'),
  MQTT_PORT: port(1883),
  // The MQTT listeners' addresses: devices may need the network while HTTP stays behind a local proxy.
  MQTT_HOST: optionalText,
  MQTT_TLS_HOST: optionalText,
  MQTT_EXTERNAL_URL: optionalUrl,
  AUTH_SECRET: z.string().min(32, 'AUTH_SECRET must be at least 32 characters').optional(),
  ADMIN_EMAILS: csv,
  TRUSTED_ORIGINS: csv,
  TRUST_PROXY: z.string().optional(),
  SMTP_URL: optionalUrl,
  MAIL_FROM: z.string().default('Display Pairing <no-reply@localhost>'),
  S3_ENDPOINT: optionalUrl,
  S3_BUCKET: z.string().optional(),
  S3_REGION: z.string().default('us-east-1'),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  IMAGE_PROVIDER: z.enum(['local', 'replicate', 'fal', 'bfl', 'openai']).default('local'),
  GENERATION_TIMEOUT: z.coerce.number().int().min(5).max(86400).default(600),
  GENERATION_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(4),
  // Worker threads converting images for displays; one core is left to the event loop by default.
  IMAGE_WORKERS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(Math.max(1, availableParallelism() - 1)),
  GENERATION_POLL_BASE_MS: z.coerce.number().int().min(10).default(500),
  GENERATION_POLL_MAX_MS: z.coerce.number().int().min(10).default(10_000),
  GENERATION_TICK_MS: z.coerce.number().int().min(10).default(250),
  DEVICE_REPORT_INTERVAL: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 86_400)
    .default(300),
  LOG_MAX_ENTRIES: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  LOG_MAX_AGE_DAYS: z.coerce.number().int().min(1).max(3650).default(7),
  LOG_RATE_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(120),
  LOG_BURST: z.coerce.number().int().min(1).max(100_000).default(300),
  TRMNL_REFRESH_SECONDS: z.coerce.number().int().min(5).max(86_400).default(900),
  TRMNL_OFFLINE_MARGIN_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  FIRMWARE_SIGNING_KEY: z.string().optional(),
  FIRMWARE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(256 * 1024 * 1024)
    .default(32 * 1024 * 1024),
  FIRMWARE_URL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 86_400)
    .default(3600),
  SCHEDULE_MIN_SECONDS: z.coerce.number().int().min(1).max(86400).default(60),
  SCHEDULE_TICK_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  SCHEDULE_BATCH: z.coerce.number().int().min(1).max(5000).default(1000),
  SCHEDULE_LEASE_MS: z.coerce.number().int().min(500).max(600_000).optional(),
  LOCAL_PROVIDER_DURATION_MS: z.coerce.number().int().min(0).max(600_000).default(1500),
  REPLICATE_API_TOKEN: z.string().optional(),
  REPLICATE_BASE_URL: providerBaseUrl('https://api.replicate.com'),
  FAL_KEY: z.string().optional(),
  FAL_BASE_URL: providerBaseUrl('https://queue.fal.run'),
  BFL_API_KEY: z.string().optional(),
  BFL_BASE_URL: providerBaseUrl('https://api.bfl.ai'),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: providerBaseUrl('https://api.openai.com'),
  VAPID_PUBLIC_KEY: z.string().optional(),
  VAPID_PRIVATE_KEY: z.string().optional(),
  VAPID_SUBJECT: z
    .string()
    .regex(/^(mailto:|https:\/\/)\S+$/, 'VAPID_SUBJECT must be a mailto: address or an https: URL')
    .optional(),
  PUSH_ENDPOINT_HOSTS: z.string().default(defaultPushHosts),
  PUSH_CA_FILE: z.string().optional(),
  PUSH_TTL: z.coerce.number().int().min(0).max(2419200).default(86400),
  PUSH_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(4),
  PUSH_MAX_RETRY_WAIT: z.coerce.number().int().min(0).max(300).default(30),
  PUSH_PRESENCE_WINDOW: z.coerce.number().min(0).max(3600).default(10),
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(10 * 1024 * 1024),
  LOG_LEVEL: z.enum(logLevels).default('info'),
  // GET /api/demo draws and stores an image for anyone, unauthenticated (rate-limited): off for a public server.
  DEMO_ENABLED: z.enum(['true', 'false']).default('true'),
  // pretty: one readable line per entry (pino-pretty); json: one JSON object per line, for log collectors.
  LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
  SESSION_CACHE_TTL_MS: z.coerce.number().int().min(0).max(300_000).default(30_000),
  BODY_LIMIT: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  RATE_LIMIT_WINDOW: z.coerce.number().int().positive().default(60),
  RATE_LIMIT_MAX: z.coerce.number().int().positive().default(200),
  RATE_LIMIT_AUTH_WINDOW: z.coerce.number().int().positive().default(60),
  RATE_LIMIT_AUTH_MAX: z.coerce.number().int().positive().default(5),
  GOOGLE_CLIENT_ID: z.string().optional(),
  GOOGLE_CLIENT_SECRET: z.string().optional(),
  GITHUB_CLIENT_ID: z.string().optional(),
  GITHUB_CLIENT_SECRET: z.string().optional(),
  APPLE_CLIENT_ID: z.string().optional(),
  APPLE_CLIENT_SECRET: z.string().optional(),
  APPLE_APP_BUNDLE_IDENTIFIER: z.string().optional(),
  PASSKEY_RP_ID: z.string().optional(),
  DEVICE_CODE_TTL: z.coerce.number().int().min(30).max(86400).default(3600),
  DEVICE_POLL_INTERVAL: z.coerce.number().int().min(0).max(60).default(5),
  DEVICE_SWEEP_INTERVAL: z.coerce.number().int().min(1).default(60),
  DEVICE_AUTO_APPROVE_USER_EMAIL: z.preprocess(
    (v) => (typeof v === 'string' && !v.trim() ? undefined : v),
    z.string().trim().email().optional(),
  ),
  NODE_ENV: z.string().optional(),
  MQTT_PUBLIC_URL: optionalUrl,
  MQTT_EXTERNAL_USERNAME: z.string().optional(),
  MQTT_EXTERNAL_PASSWORD: z.string().optional(),
  MQTT_AUTH_SECRET: z.string().min(16, 'MQTT_AUTH_SECRET must be at least 16 characters').optional(),
  RABBITMQ_AMQP_URL: optionalUrl,
  RABBITMQ_MANAGEMENT_URL: optionalUrl,
  RABBITMQ_VHOST: z.string().min(1).default('/'),
  RABBITMQ_PRESENCE_QUEUE: z.string().min(1).max(255).default('dps.presence'),
  MQTT_OFFLINE_QUEUE_LIMIT: z.coerce.number().int().min(1).default(1000),
  MQTT_TLS_PORT: port(8883),
  MQTT_TLS_CERT: z.string().optional(),
  MQTT_TLS_KEY: z.string().optional(),
  MQTT_BROKER_ID: z
    .string()
    .regex(/^[\w.-]{1,64}$/)
    .optional(),
  MQTT_MAX_PACKET_SIZE: z.coerce
    .number()
    .int()
    .min(1024)
    .max(256 * 1024 * 1024)
    .default(256 * 1024),
  MQTT_CONNECT_RATE: z.coerce.number().int().min(0).default(50),
  MQTT_KEEPALIVE_MAX: z.coerce.number().int().min(0).max(65535).default(3600),
  MQTT_QUEUE_LIMIT: z.coerce.number().int().min(1).default(100),
  MQTT_MAX_INFLIGHT: z.coerce.number().int().min(1).default(100),
  MQTT_MAX_SUBSCRIPTIONS: z.coerce.number().int().min(0).default(500),
  MQTT_INBOUND_RATE: z.coerce.number().min(0).default(100),
  MQTT_INBOUND_BURST: z.coerce.number().int().min(1).default(200),
  MQTT_HEARTBEAT_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
  DOWNLINK_MAX_PER_DEVICE: z.coerce.number().int().min(1).max(100_000).default(1000),
  DOWNLINK_MAX_AGE: z.coerce
    .number()
    .int()
    .min(60)
    .default(7 * 86400),
  DOWNLINK_KEEP_DELIVERED: z.coerce.number().int().min(0).default(3600),
  PASSKEY_RP_NAME: z.string().default('Display Pairing'),
})

/** The environment variables the service reads (docs/configuration.md documents each; test/docs/configuration.test.ts checks both ways). */
export const configVariables: readonly string[] = Object.keys(envSchema.shape)

export type SocialProvider = { clientId: string; clientSecret: string; appBundleIdentifier?: string }

/**
 * The validated configuration: whatever loadConfig builds from the environment schema, so the
 * type cannot drift from the schema or from the code that reads it.
 */
export type Config = ReturnType<typeof loadConfig>

/** Remote image-generation providers; each present only when its key is set. */
export type ImageProviders = {
  replicate?: { token: string; baseUrl: string }
  fal?: { key: string; baseUrl: string }
  bfl?: { key: string; baseUrl: string }
  openai?: { key: string; baseUrl: string }
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/**
 * Fastify `trustProxy`: false (socket address), true, or a list of addresses/CIDRs. A hop count
 * is refused: Fastify 5 accepts one but trusts no proxy with it, so the setting would do nothing.
 */
function parseTrustProxy(raw: string | undefined): boolean | string[] {
  const v = raw?.trim()
  if (!v || v === 'false') return false
  if (v === 'true') return true
  if (/^\d+$/.test(v)) {
    throw new ConfigError(
      `Invalid configuration:\n  TRUST_PROXY: a hop count (${v}) is not supported; give the proxy's address or CIDR (127.0.0.1 for a proxy on this machine), or true`,
    )
  }
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

function pair(id?: string, secret?: string, extra?: Partial<SocialProvider>): SocialProvider | undefined {
  return id && secret ? { clientId: id, clientSecret: secret, ...extra } : undefined
}

/** A value generated because DATA_DIR held none: `name` is its file there, written at start. */
type Generated = { name: string; value: string }

/**
 * What DATA_DIR/`name` holds, or undefined when there is no such file. Reading only: loadConfig
 * creates nothing (persistGenerated writes at start).
 */
function storedValue(dataDir: string, name: string): string | undefined {
  const file = join(dataDir, name)
  let text: string
  try {
    text = readFileSync(file, 'utf8').trim()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  if (!text) {
    throw new ConfigError(
      `Invalid configuration:\n  ${file} is empty (a start stopped, or another is starting, while writing it): start again, or remove it to have it generated anew`,
    )
  }
  return text
}

/**
 * A value generated once and kept in DATA_DIR (AUTH_SECRET, the firmware signing key, the broker
 * id) so it survives restarts: the stored one, or a new one made in memory and noted in
 * `generated` for persistGenerated to write when the service starts.
 */
function keptValue(dataDir: string, name: string, make: () => string, generated: Generated[]): string {
  const stored = storedValue(dataDir, name)
  if (stored !== undefined) return stored
  const value = make()
  generated.push({ name, value })
  return value
}

/**
 * Writes what loadConfig generated (config.generated) into DATA_DIR, creating the folder: the
 * explicit step at start (buildApp's first) that makes the next start use the same secret, key and
 * broker id. Each file is created with flag 'wx' (mode 0600), so of two processes starting on one
 * fresh DATA_DIR exactly one creates it. The other finds the file there (EEXIST) and reads it back:
 * the same value (a second buildApp on one config) is fine; another value means this process already
 * holds its own in `config` (parsed, possibly copied by its caller), so rather than patching config
 * in place it refuses to start, and a second start reads the winner's files. Files are written in the
 * order loadConfig made them and the first conflict stops, so of two racing starts one always goes on.
 */
export function persistGenerated(config: { dataDir: string; generated: readonly Generated[] }): void {
  if (!config.generated.length) return
  mkdirSync(config.dataDir, { recursive: true })
  for (const { name, value } of config.generated) {
    const file = join(config.dataDir, name)
    try {
      writeFileSync(file, `${value}\n`, { mode: 0o600, flag: 'wx' })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      if (readFileSync(file, 'utf8').trim() !== value) {
        throw new ConfigError(
          `Invalid configuration:\n  ${file} was written by another process starting on the same DATA_DIR at the same time: start again to use it`,
        )
      }
    }
  }
}

/**
 * The key releases are signed with: FIRMWARE_SIGNING_KEY (PKCS#8 PEM) or, when unset, one
 * generated once into DATA_DIR/firmware-signing-key. Devices trust its public key for good, so
 * losing it means re-pairing every device: back it up with the data folder.
 */
function firmwareSettings(configured: string | undefined, dataDir: string, maxBytes: number, urlSeconds: number, generated: Generated[]) {
  const pem = configured?.trim() || keptValue(dataDir, 'firmware-signing-key', () => newSigningKeyPem().trim(), generated)
  let key: ReturnType<typeof readSigningKey>
  try {
    key = readSigningKey(pem)
  } catch (err) {
    const where = configured?.trim() ? 'FIRMWARE_SIGNING_KEY' : join(dataDir, 'firmware-signing-key')
    throw new ConfigError(`Invalid configuration:\n  ${where}: ${(err as Error).message}`)
  }
  return {
    signingKey: key,
    /** Raw Ed25519 public key, base64: given to devices. */
    publicKey: publicKeyOf(key),
    /** Largest firmware image accepted. */
    maxBytes,
    /** How long a download link in an offer stays valid. */
    urlSeconds,
  }
}

/** Each remote provider is configured by its key; a blank key counts as unset. */
function providersFrom(e: z.infer<typeof envSchema>): ImageProviders {
  const providers: ImageProviders = {}
  const key = (v: string | undefined) => v?.trim() || undefined
  const replicate = key(e.REPLICATE_API_TOKEN)
  const fal = key(e.FAL_KEY)
  const bfl = key(e.BFL_API_KEY)
  const openai = key(e.OPENAI_API_KEY)
  if (replicate) providers.replicate = { token: replicate, baseUrl: e.REPLICATE_BASE_URL }
  if (fal) providers.fal = { key: fal, baseUrl: e.FAL_BASE_URL }
  if (bfl) providers.bfl = { key: bfl, baseUrl: e.BFL_BASE_URL }
  if (openai) providers.openai = { key: openai, baseUrl: e.OPENAI_BASE_URL }
  return providers
}

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  const parsed = envSchema.safeParse(env)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`)
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`)
  }
  const e = parsed.data
  const dataDir = resolve(e.DATA_DIR)
  // A wildcard or loopback HOST is reached as localhost: what browsers treat as a secure context
  // and what a passkey's relying party may be (an IP address may not).
  const publicHost = e.HOST === '0.0.0.0' || e.HOST === '::' || isLoopbackHost(e.HOST) ? 'localhost' : e.HOST
  const baseUrl = (e.BASE_URL ?? `http://${publicHost}:${e.PORT}`).replace(/\/+$/, '')
  const mqttHost = e.MQTT_HOST ?? e.HOST
  const mqttTlsHost = e.MQTT_TLS_HOST ?? mqttHost
  const mqttTls = Boolean(e.MQTT_TLS_CERT && e.MQTT_TLS_KEY)
  const trustProxy = parseTrustProxy(e.TRUST_PROXY)
  if (Boolean(e.MQTT_TLS_CERT) !== Boolean(e.MQTT_TLS_KEY)) {
    throw new ConfigError('Invalid configuration:\n  MQTT_TLS_CERT and MQTT_TLS_KEY must be set together')
  }
  if ((e.VAPID_PUBLIC_KEY && !e.VAPID_PRIVATE_KEY) || (!e.VAPID_PUBLIC_KEY && e.VAPID_PRIVATE_KEY)) {
    throw new ConfigError('Invalid configuration:\n  VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY must be set together')
  }
  // Values kept in DATA_DIR but not there yet: generated here, written by persistGenerated at start.
  const generated: Generated[] = []
  // Fixed per node (kept in DATA_DIR): what this node's earlier runs left (connections, wills,
  // schedule claims) is recognised as its own after a restart.
  const nodeId = e.MQTT_BROKER_ID ?? keptValue(dataDir, 'broker-id', () => `node-${randomBytes(6).toString('hex')}`, generated)
  const providers = providersFrom(e)
  if (e.IMAGE_PROVIDER !== 'local' && !providers[e.IMAGE_PROVIDER]) {
    const keyName = { replicate: 'REPLICATE_API_TOKEN', fal: 'FAL_KEY', bfl: 'BFL_API_KEY', openai: 'OPENAI_API_KEY' }[e.IMAGE_PROVIDER]
    throw new ConfigError(`Invalid configuration:\n  IMAGE_PROVIDER=${e.IMAGE_PROVIDER} needs ${keyName}`)
  }
  const checked =
    e.NODE_ENV === 'production'
      ? productionChecks({
          authSecretSet: Boolean(e.AUTH_SECRET),
          baseUrl: e.BASE_URL,
          allowHttpBaseUrl: e.ALLOW_HTTP_BASE_URL === 'true',
          host: e.HOST,
          mqttHost,
          mqttTlsHost,
          trustProxy,
          smtpUrl: e.SMTP_URL,
          trustedOrigins: e.TRUSTED_ORIGINS,
          demoEnabled: e.DEMO_ENABLED === 'true',
          adminEmails: e.ADMIN_EMAILS,
          deviceAutoApproveUserEmail: e.DEVICE_AUTO_APPROVE_USER_EMAIL,
          mqttTls,
          mqttPublicUrl: e.MQTT_PUBLIC_URL,
          mqttExternal: Boolean(e.MQTT_EXTERNAL_URL),
        })
      : { problems: [], warnings: [] }
  if (checked.problems.length) {
    throw new ConfigError(
      `Refusing to start with NODE_ENV=production (docs/deployment.md, production checklist):\n${checked.problems.map((p) => `  ${p}`).join('\n')}`,
    )
  }
  return {
    port: e.PORT,
    host: e.HOST,
    /** What the production checklist found worth saying but not refusing; logged at start. */
    warnings: checked.warnings,
    baseUrl,
    dataDir,
    /** This node's fixed id (MQTT_BROKER_ID, or generated once into DATA_DIR/broker-id). */
    nodeId,
    /** What DATA_DIR should keep but did not hold yet (generated in memory): persistGenerated writes it at start. */
    generated: generated as readonly Generated[],
    databaseUrl: e.DATABASE_URL,
    pgliteSharedBuffers: e.PGLITE_SHARED_BUFFERS,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    mqttPort: e.MQTT_PORT,
    /**
     * MQTT_PORT left at its default: a first run beside another broker on 1883 (Mosquitto) then
     * takes the next free port and says so, instead of failing (an explicit MQTT_PORT must be free).
     */
    mqttPortIsDefault: !env.MQTT_PORT,
    authSecret: e.AUTH_SECRET ?? keptValue(dataDir, 'auth-secret', () => randomBytes(32).toString('base64url'), generated),
    adminEmails: e.ADMIN_EMAILS.map((s) => s.toLowerCase()),
    trustedOrigins: e.TRUSTED_ORIGINS,
    /**
     * Origins whose pages may use the session cookie: this service's and the trusted ones, in the
     * normal form a browser's Origin header has. Cookie-authenticated HTTP writes and MQTT over
     * WebSocket both check against it.
     */
    cookieOrigins: [baseUrl, ...e.TRUSTED_ORIGINS].flatMap((o) => {
      try {
        return [new URL(o).origin]
      } catch {
        return []
      }
    }),
    /** Fastify `trustProxy`: false (socket address), true, or a list of addresses/CIDRs; also for MQTT over WebSocket. */
    trustProxy,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    s3: e.S3_BUCKET
      ? {
          endpoint: e.S3_ENDPOINT,
          bucket: e.S3_BUCKET,
          region: e.S3_REGION,
          accessKeyId: e.S3_ACCESS_KEY_ID,
          secretAccessKey: e.S3_SECRET_ACCESS_KEY,
        }
      : undefined,
    imageProvider: e.IMAGE_PROVIDER,
    providers,
    health: {
      /** Seconds between status reports assumed for a device that does not say (`interval` in up/status); silent after three. */
      defaultIntervalSeconds: e.DEVICE_REPORT_INTERVAL,
    },
    deviceLogs: {
      /** Entries kept per device (the oldest go first), and for how long. */
      maxEntries: e.LOG_MAX_ENTRIES,
      maxAgeDays: e.LOG_MAX_AGE_DAYS,
      /** Entries accepted per device per minute, with bursts up to `burst`; the rest are counted, not stored. */
      ratePerMinute: e.LOG_RATE_PER_MINUTE,
      burst: e.LOG_BURST,
    },
    trmnl: {
      /** Seconds between polls asked of TRMNL devices (refresh_rate), and how late one may be before it is offline. */
      refreshSeconds: e.TRMNL_REFRESH_SECONDS,
      marginSeconds: e.TRMNL_OFFLINE_MARGIN_SECONDS,
    },
    firmware: firmwareSettings(e.FIRMWARE_SIGNING_KEY, dataDir, e.FIRMWARE_MAX_BYTES, e.FIRMWARE_URL_SECONDS, generated),
    schedule: {
      /** The shortest time per playlist item (tests and demos lower it). */
      minSeconds: e.SCHEDULE_MIN_SECONDS,
      /** Longest wait between two looks for due turns. */
      tickMs: e.SCHEDULE_TICK_MS,
      /** Due turns claimed per statement (the rest wait for the next claim, by this or another instance). */
      batch: e.SCHEDULE_BATCH,
      /**
       * How long a claim on due turns lasts unless renewed (every third of it, while the batch is
       * worked on): a crashed node's turns are taken over within it, so it is at most half the
       * shortest turn, and 30 s at most.
       */
      leaseMs: e.SCHEDULE_LEASE_MS ?? Math.min(30_000, Math.max(1000, e.SCHEDULE_MIN_SECONDS * 500)),
    },
    generation: {
      /** Seconds a job may take before it fails with TIMEOUT (and is refunded). */
      timeoutSeconds: e.GENERATION_TIMEOUT,
      /** Jobs per provider worked on at once by one instance. */
      concurrency: e.GENERATION_CONCURRENCY,
      pollBaseMs: e.GENERATION_POLL_BASE_MS,
      pollMaxMs: e.GENERATION_POLL_MAX_MS,
      tickMs: e.GENERATION_TICK_MS,
      /** How long the local provider takes (queued for the first third, then running). */
      localDurationMs: e.LOCAL_PROVIDER_DURATION_MS,
    },
    vapid:
      e.VAPID_PUBLIC_KEY && e.VAPID_PRIVATE_KEY
        ? { publicKey: e.VAPID_PUBLIC_KEY, privateKey: e.VAPID_PRIVATE_KEY, subject: e.VAPID_SUBJECT ?? `mailto:admin@${publicHost}` }
        : undefined,
    push: {
      /** VAPID subject (mailto: or https:) also used with generated keys. */
      subject: e.VAPID_SUBJECT ?? `mailto:admin@${publicHost}`,
      /** Allowed push-service hosts: exact names, '.suffix' for subdomains, '*' for any https host. */
      endpointHosts: e.PUSH_ENDPOINT_HOSTS.split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
      /** PEM file of extra CAs trusted for push services (a private push service, or tests). */
      caFile: e.PUSH_CA_FILE,
      /** Seconds a push service keeps an undelivered message. */
      ttl: e.PUSH_TTL,
      maxAttempts: e.PUSH_MAX_ATTEMPTS,
      /** Longest wait between attempts, in seconds; a longer Retry-After ends the retries. */
      maxRetryWait: e.PUSH_MAX_RETRY_WAIT,
      /** Seconds during which an owner's further device online/offline changes are gathered into one notification. */
      presenceWindow: e.PUSH_PRESENCE_WINDOW,
    },
    uploads: { maxBytes: e.UPLOAD_MAX_BYTES },
    /** Worker threads that convert images for displays (src/images/conversion-pool.ts). */
    imageWorkers: e.IMAGE_WORKERS,
    logLevel: e.LOG_LEVEL,
    demoEnabled: e.DEMO_ENABLED === 'true',
    /** Readable lines on a terminal, JSON anywhere else (a pipe, a file, journald), unless LOG_FORMAT says. */
    logPretty: e.LOG_FORMAT ? e.LOG_FORMAT === 'pretty' : Boolean(process.stdout.isTTY),
    bodyLimit: e.BODY_LIMIT,
    /** How long a resolved session is reused (0 = no cache); account changes clear it at once. */
    sessionCacheTtlMs: e.SESSION_CACHE_TTL_MS,
    rateLimit: {
      window: e.RATE_LIMIT_WINDOW,
      max: e.RATE_LIMIT_MAX,
      authWindow: e.RATE_LIMIT_AUTH_WINDOW,
      authMax: e.RATE_LIMIT_AUTH_MAX,
    },
    social: {
      google: pair(e.GOOGLE_CLIENT_ID, e.GOOGLE_CLIENT_SECRET),
      github: pair(e.GITHUB_CLIENT_ID, e.GITHUB_CLIENT_SECRET),
      apple: pair(e.APPLE_CLIENT_ID, e.APPLE_CLIENT_SECRET, { appBundleIdentifier: e.APPLE_APP_BUNDLE_IDENTIFIER }),
    },
    passkey: { rpId: e.PASSKEY_RP_ID ?? new URL(baseUrl).hostname, rpName: e.PASSKEY_RP_NAME },
    devices: {
      /** Seconds a pending pairing stays valid. */
      codeTtl: e.DEVICE_CODE_TTL,
      /** Seconds a device waits between polls of get-init-device. */
      pollInterval: e.DEVICE_POLL_INTERVAL,
      /** Seconds between sweeps that mark stale pending records expired. */
      sweepInterval: e.DEVICE_SWEEP_INTERVAL,
      /** Development only: every init is claimed at once for this account (refused in production). */
      autoApproveUserEmail: e.DEVICE_AUTO_APPROVE_USER_EMAIL?.toLowerCase(),
      /** The MQTT URL handed to devices with their credentials: over TLS when its listener is configured. */
      mqttPublicUrl:
        e.MQTT_PUBLIC_URL ??
        (mqttTls ? `mqtts://${new URL(baseUrl).hostname}:${e.MQTT_TLS_PORT}` : `mqtt://${new URL(baseUrl).hostname}:${e.MQTT_PORT}`),
      /** Derived from the listener's port (and so follows the port it bound, when another was taken or 0 asked for one). */
      mqttPublicUrlIsDefault: !e.MQTT_PUBLIC_URL,
    },
    mqtt: {
      external: e.MQTT_EXTERNAL_URL
        ? { url: e.MQTT_EXTERNAL_URL, username: e.MQTT_EXTERNAL_USERNAME, password: e.MQTT_EXTERNAL_PASSWORD }
        : undefined,
      /** Shared secret an external broker sends to POST /api/device/mqtt-auth (and RabbitMQ to /api/device/rabbitmq/*). */
      authSecret: e.MQTT_AUTH_SECRET,
      /**
       * RabbitMQ as the external broker (docs/rabbitmq.md): the vhost devices may use; presence from
       * its event exchange when the AMQP URL is set; kicks through its management API when that URL is set.
       */
      rabbitmq: {
        vhost: e.RABBITMQ_VHOST,
        amqpUrl: e.RABBITMQ_AMQP_URL,
        managementUrl: e.RABBITMQ_MANAGEMENT_URL,
        presenceQueue: e.RABBITMQ_PRESENCE_QUEUE,
      },
      offlineQueueLimit: e.MQTT_OFFLINE_QUEUE_LIMIT,
      /** Cluster mode: heartbeat interval; a node silent for three is dead (its devices go offline, its wills are published). */
      heartbeatMs: e.MQTT_HEARTBEAT_MS,
      /** The plain TCP listener's address (HOST unless MQTT_HOST says). */
      host: mqttHost,
      /** PEM files, read again on SIGHUP; the TLS listener starts only when both are set. */
      tls:
        e.MQTT_TLS_CERT && e.MQTT_TLS_KEY
          ? { port: e.MQTT_TLS_PORT, host: mqttTlsHost, certFile: e.MQTT_TLS_CERT, keyFile: e.MQTT_TLS_KEY }
          : undefined,
      /** This node's id (nodeId): each run of it is a broker of its own, `<node>~<run>` (device-broker.ts). */
      brokerId: nodeId,
      limits: {
        maxPacketSize: e.MQTT_MAX_PACKET_SIZE,
        connectRate: e.MQTT_CONNECT_RATE,
        connectWindowMs: 10_000,
        keepaliveLimit: e.MQTT_KEEPALIVE_MAX,
        queueLimit: e.MQTT_QUEUE_LIMIT,
        maxInflight: e.MQTT_MAX_INFLIGHT,
        maxSubscriptions: e.MQTT_MAX_SUBSCRIPTIONS,
        inboundRate: e.MQTT_INBOUND_RATE,
        inboundBurst: e.MQTT_INBOUND_BURST,
      },
    },
    /** The durable downlink's bound per device (src/downlink). */
    downlink: {
      maxPerDevice: e.DOWNLINK_MAX_PER_DEVICE,
      maxAgeMs: e.DOWNLINK_MAX_AGE * 1000,
      keepDeliveredMs: e.DOWNLINK_KEEP_DELIVERED * 1000,
    },
  }
}
