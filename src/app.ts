// Builds the whole service from a validated Config. The server and every test use this.
import Fastify, { type FastifyInstance } from 'fastify'
import type {} from '@fastify/swagger'
import cors from '@fastify/cors'
import { createAuth, type Auth } from './auth/auth.js'
import { mountAuth } from './auth/mount.js'
import { attachSessionCache } from './auth/guard.js'
import { createSessionCache, type SessionCache } from './auth/session-cache.js'
import { DOCS_PATH, registerOpenApi } from './openapi/register.js'
import { installRouteAuth } from './auth/route-auth.js'
import { clientErrorHandler } from './http/client-errors.js'
import { closeUnusedConnectionsOnClose } from './http/connections.js'
import { forbidFraming } from './http/frame-guard.js'
import { sessionRecordSchema, userRecordSchema } from './auth/session-shape.js'
import { sessionRoutes } from './auth/session-routes.js'
import { persistGenerated, type Config } from './config.js'
import { initPgliteDir, openDatabase, type DatabaseHandle } from './db/client.js'
import { errorBodySchema, installErrorHandling } from './errors.js'
import { registerRateLimit } from './http/rate-limit.js'
import { createMailer, type Mailer } from './mail/mailer.js'
import { connectRedis, type RedisHandle } from './redis/client.js'
import { memoryCounters, redisCounters } from './http/counters.js'
import { trackHandlers } from './http/drain.js'
import { installSchemaCompilers } from './http/schema-compilers.js'
import { installJsonParser } from './http/validation.js'
import { checkMultipartBoundaries } from './http/multipart-boundary.js'
import { sharedDeviceSchemas } from './devices/records.js'
import { deviceRoutes } from './devices/routes.js'
import { createDeviceService, type DeviceService } from './devices/service.js'
import type { DeviceLink } from './devices/sessions.js'
import { startBroker } from './mqtt/start.js'
import { createOutbox, type Outbox, type ResendOptions } from './downlink/outbox.js'
import { downlinkRoutes } from './downlink/routes.js'
import { demoRoutes } from './generation/demo.js'
import { generationRoutes } from './generation/routes.js'
import { createGenerationService, type GenerationService } from './generation/service.js'
import { buildProviders, defaultModelId } from './generation/setup.js'
import { imageRoutes } from './images/routes.js'
import { promptRoutes } from './prompts/routes.js'
import { promptInputSchema, promptRecordSchema, promptTemplatesSchema } from './prompts/records.js'
import { generationRequestSchema, generationResponseSchema, generationResultSchema } from './generation/records.js'
import { createPromptService } from './prompts/service.js'
import { verificationPage } from './devices/verification-page.js'
import { mqttAuthRoutes } from './mqtt/auth-routes.js'
import { rabbitmqAuthRoutes } from './mqtt/rabbitmq-auth-routes.js'
import { eventRecordSchema } from './events/records.js'
import { createObjectStore } from './storage/index.js'
import { joinCluster } from './cluster/membership.js'
import type { ObjectStore } from './storage/store.js'
import { createNotifications, notificationRoutes, type Notifier } from './notifications/index.js'
import { fileRoutes } from './storage/routes.js'
import { uploadRoutes } from './uploads/routes.js'
import { createUploadService } from './uploads/service.js'
import { createUploadSender } from './uploads/send.js'
import { createConversionPool, type ConversionPool } from './images/conversion-pool.js'
import { invitationRoutes } from './invitations/routes.js'
import { consoleRoutes } from './web/routes.js'
import { createPlaylistService } from './schedules/playlists.js'
import { playlistItemInputSchema, playlistRecordSchema, scheduleRecordSchema } from './schedules/records.js'
import { scheduleRoutes } from './schedules/routes.js'
import { createScheduler } from './schedules/scheduler.js'
import { createScheduleService } from './schedules/service.js'
import { deviceLogRoutes } from './device-logs/routes.js'
import { createDeviceLogService } from './device-logs/service.js'
import { createHealthService } from './health/service.js'
import { firmwareRoutes } from './firmware/routes.js'
import { trmnlRoutes } from './trmnl/routes.js'
import { createTrmnlService } from './trmnl/service.js'
import { checkSigningKey, createFirmwareService, type FirmwareService } from './firmware/service.js'
import { webDist } from './web/build.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    database: DatabaseHandle
    auth: Auth
    mailer: Mailer
    redis?: RedisHandle
    devices: DeviceService
    deviceLink: DeviceLink
    /** The durable downlink: numbered, stored messages to devices (deviceLink is the same object). */
    downlink: Outbox
    storage: ObjectStore
    sessionCache: SessionCache
    generation: GenerationService
    /** Push notifications: notifyUser(userId, kind, { title, body, url }) for other modules. */
    notifier: Notifier
    /** Converts images for displays off the event loop, fairly between accounts. */
    images: ConversionPool
    /** The bound MQTT TCP port once the app is ready (embedded broker only). */
    mqttPort?: number
  }
}

export type AppOptions = {
  /** The time the scheduler goes by: tests and the benchmark move it instead of waiting. */
  clock?: () => Date
}

export async function buildApp(config: Config, opts: AppOptions = {}): Promise<FastifyInstance> {
  // Loading config writes nothing: what it generated (secret, signing key, broker id) is kept in
  // DATA_DIR here, before anything uses it. Every start (server, scripts, benches, tests) builds the app.
  persistGenerated(config)
  const app = Fastify({
    logger: {
      level: config.logLevel,
      ...(config.logPretty
        ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' } } }
        : {}),
    },
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimit,
    // Plugins that run migrations or open connections can take more than Fastify's 10 s on a busy
    // machine: a slow start is not a failed one.
    pluginTimeout: 60_000,
    clientErrorHandler,
  })
  closeUnusedConnectionsOnClose(app.server)
  try {
    await assemble(app, config, opts)
  } catch (err) {
    // Whatever was opened before the failure (database, Redis, broker) is closed again.
    await app.close().catch(() => {})
    throw err
  }
  return app
}

async function assemble(app: FastifyInstance, config: Config, opts: AppOptions): Promise<void> {
  // The time the scheduler and the device logs go by (tests move it).
  const clock = opts.clock ?? (() => new Date())
  const errorHandling = installErrorHandling(app)
  forbidFraming(app)
  const handlers = trackHandlers(app)
  const shared = [
    errorBodySchema,
    sessionRecordSchema,
    userRecordSchema,
    eventRecordSchema,
    ...sharedDeviceSchemas,
    promptInputSchema,
    promptRecordSchema,
    promptTemplatesSchema,
    generationRequestSchema,
    generationResultSchema,
    generationResponseSchema,
    playlistItemInputSchema,
    playlistRecordSchema,
    scheduleRecordSchema,
  ]
  for (const schema of shared) app.addSchema(schema)
  installSchemaCompilers(app, shared)
  installJsonParser(app)
  checkMultipartBoundaries(app)

  if (!config.databaseUrl) await initPgliteDir(config.dataDir)
  const database = openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    pgliteSharedBuffers: config.pgliteSharedBuffers,
  })
  app.decorate('database', database)
  app.addHook('onClose', async () => database.close())
  await database.migrate()

  const redis = config.redisUrl ? await connectRedis(config.redisUrl, config.redisPrefix) : undefined
  if (redis) {
    app.decorate('redis', redis)
    app.addHook('onClose', async () => redis.close())
  }

  const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, log: app.log })
  app.decorate('mailer', mailer)
  app.addHook('onClose', async () => mailer.close())

  const storage = await createObjectStore(config)
  app.decorate('storage', storage)
  app.addHook('onClose', async () => storage.close())

  // Display conversions run in worker threads, each account's in its own queue, in turn.
  const images = createConversionPool({ threads: config.imageWorkers })
  app.decorate('images', images)
  app.addHook('onClose', async () => images.close())

  if (redis) {
    // Before anything reads what another node wrote (sessions, keys, images): same cluster, same everything.
    const membership = await joinCluster({
      redis,
      db: database.db,
      storage,
      authSecret: config.authSecret,
      firmwareKey: config.firmware.publicKey,
      refreshMs: config.mqtt.heartbeatMs,
    })
    app.addHook('onClose', async () => membership.close())
  }

  await checkSigningKey(database.db, config.firmware.publicKey)

  const auth = createAuth({ config, db: database.db, mailer, redis, log: app.log })
  app.decorate('auth', auth)
  const sessionCache = await createSessionCache({
    ttlMs: config.sessionCacheTtlMs,
    redis,
    onError: (err) => app.log.warn({ err }, 'session cache'),
  })
  attachSessionCache(auth, sessionCache, database.db)
  app.decorate('sessionCache', sessionCache)
  app.addHook('onClose', async () => sessionCache.close())
  app.decorate('config', config)

  // Before any route: each declares who may call it, checked before its body is read.
  installRouteAuth(app, {
    auth,
    db: database.db,
    docsPath: DOCS_PATH,
    allowedOrigins: new Set(config.cookieOrigins),
    ownOrigin: new URL(config.baseUrl).origin,
  })
  // Before any route: the OpenAPI document is collected from routes as they are registered.
  await registerOpenApi(app, { auth })

  await app.register(cors, {
    origin: config.trustedOrigins.length ? config.trustedOrigins : false,
    credentials: true,
    // Every method the API uses (the plugin's default is GET, HEAD and POST only).
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
  })
  await registerRateLimit(app, { window: config.rateLimit.window, max: config.rateLimit.max, redis })

  await app.register(mountAuth, {
    auth,
    baseUrl: config.baseUrl,
    secret: config.authSecret,
    bodyLimit: config.bodyLimit,
    onAccountChange: () => sessionCache.clearAll(),
  })
  await app.register(sessionRoutes, { auth, db: database.db })

  const notifications = await createNotifications({ config, db: database.db, log: app.log })
  app.decorate('notifier', notifications.notifier)
  app.addHook('onClose', async () => notifications.close())

  // Producers of device messages stop before the broker closes (preClose hooks run in order).
  const producers: Array<() => Promise<void>> = []
  app.addHook('preClose', async () => {
    for (const stop of producers) await stop()
  })

  // Every message to a device goes through the outbox, which hands it to the broker (or the
  // external broker) once it is stored; bound once the transport exists.
  let outbox: Outbox | undefined
  const downlink = {
    delivered: async (id: string, seq: number) => outbox?.delivered(id, seq),
    reported: async (id: string, report: { configVersion?: number; shownImageId?: string | null }) => outbox?.reported(id, report),
    resend: async (id: string, opts: ResendOptions) => (outbox ? outbox.resend(id, opts) : 0),
    expectResend: (id: string, expected: boolean) => outbox?.expectResend(id, expected),
  }
  // Status reports feed device health (battery low, silence); like the logs, before the broker.
  const health = createHealthService({
    db: database.db,
    clock,
    defaultIntervalSeconds: config.health.defaultIntervalSeconds,
    notify: (userId, kind, message) => notifications.notifier.notifyUser(userId, kind, message),
  })
  app.decorate('health', health)
  // Device logs arrive over MQTT (up/log) as well as HTTP: the service exists before the broker.
  const deviceLogs = createDeviceLogService({ db: database.db, limits: config.deviceLogs, clock })
  app.decorate('deviceLogs', deviceLogs)
  // Firmware offers go through the outbox, which needs the broker: bound once both exist.
  let firmware: FirmwareService | undefined
  const transport = await startBroker(app, {
    config,
    db: database.db,
    auth,
    redis,
    onPresence: notifications.notifier.onPresence,
    downlink,
    uplink: {
      logs: deviceLogs.ingest,
      status: async (id, report) => {
        await health.onStatus(id, report)
        await firmware?.onStatus(id, report.firmware)
      },
      ota: async (id, report) => (firmware ? firmware.onProgress(id, report) : false),
    },
  })
  const link = (outbox = createOutbox({ db: database.db, transport, limits: config.downlink, log: app.log }))
  app.decorate('downlink', outbox)
  // Acknowledgements received before the broker closed are written before the database closes.
  app.addHook('onClose', async () => outbox?.settled())
  // After the broker's own preClose: presence notifications it started finish before the database closes.
  app.addHook('preClose', async () => notifications.notifier.idle())
  app.decorate('deviceLink', link)
  const counters = redis ? redisCounters(redis) : memoryCounters()
  const devices = createDeviceService({
    db: database.db,
    config,
    counters,
    link,
    accessChanged: async () =>
      app.broker?.revalidateAppsEverywhere().catch((err) => app.log.warn({ err }, 'could not revalidate companion app connections')),
  })
  if (config.devices.autoApproveUserEmail)
    app.log.warn(
      { email: config.devices.autoApproveUserEmail },
      'DEVICE_AUTO_APPROVE_USER_EMAIL is set: every new device is claimed for this account (development only)',
    )
  app.decorate('devices', devices)
  firmware = createFirmwareService({
    db: database.db,
    storage,
    link,
    settings: config.firmware,
    clock,
    notify: (userId, kind, message) => notifications.notifier.notifyUser(userId, kind, message),
    log: app.log,
  })
  await app.register(firmwareRoutes, { db: database.db, firmware, maxBytes: config.firmware.maxBytes })
  // What a crash left half done: halts whose failures were recorded, offers recorded but not queued.
  const firmwareService = firmware
  app.addHook('onReady', async () => {
    const done = await firmwareService.recover().catch((err) => app.log.error({ err }, 'firmware start-up pass failed'))
    if (done && (done.halted || done.requeued)) app.log.warn(done, 'firmware: finished what a crash left half done')
  })
  await app.register(deviceRoutes, { auth, db: database.db, devices })
  await app.register(downlinkRoutes, { auth, db: database.db })
  await app.register(verificationPage)
  // The external brokers' hooks exist only where one is configured (MQTT_AUTH_SECRET): elsewhere
  // they are routes of another configuration, a 404 like any unknown path (a 503 reads as an outage).
  if (config.mqtt.authSecret) {
    await app.register(mqttAuthRoutes, { auth, db: database.db, config, secret: config.mqtt.authSecret, redis })
    await app.register(rabbitmqAuthRoutes, { auth, db: database.db, config, secret: config.mqtt.authSecret })
  }
  await app.register(notificationRoutes, { auth, db: database.db, notifier: notifications.notifier })
  // The filesystem store's presigned links point here; S3 answers its own.
  if (storage.kind === 'fs')
    await app.register(fileRoutes, { store: storage, secret: config.authSecret, maxBytes: config.uploads.maxBytes })
  const uploads = createUploadService({ store: storage, maxBytes: config.uploads.maxBytes })
  const sendUpload = createUploadSender({ db: database.db, storage, images, link, baseUrl: config.baseUrl })
  await app.register(uploadRoutes, { auth, db: database.db, uploads, send: sendUpload, maxBytes: config.uploads.maxBytes })
  await app.register(invitationRoutes, { auth, db: database.db })
  // The console: a client of the routes above only, served at / with its deep links.
  errorHandling.setNotFoundFallback(
    await consoleRoutes(app, {
      distDir: webDist,
      baseUrl: config.baseUrl,
      // Images in an object store are shown from presigned URLs on its own origin.
      extraImageOrigins: config.s3 ? [config.s3.endpoint ? new URL(config.s3.endpoint).origin : 'https://*.amazonaws.com'] : [],
    }),
  )
  const prompts = createPromptService({ db: database.db, link, defaultModel: defaultModelId(config) })
  await app.register(promptRoutes, { auth, db: database.db, prompts })
  const providers = buildProviders(config)
  const generation = createGenerationService({
    db: database.db,
    config,
    storage,
    images,
    link,
    prompts,
    providers,
    log: app.log,
    notify: () => (userId, kind, message) => notifications.notifier.notifyUser(userId, kind, message),
    balanceChanged: () => sessionCache.clearAll(),
  })
  app.decorate('generation', generation)
  await app.register(generationRoutes, {
    auth,
    db: database.db,
    generation,
    baseUrl: config.baseUrl,
    providers: new Set(providers.keys()),
    balanceChanged: () => sessionCache.clearAll(),
  })
  await app.register(imageRoutes, { db: database.db, storage })
  if (config.demoEnabled) await app.register(demoRoutes, { db: database.db, storage, images, baseUrl: config.baseUrl })
  // Unfinished jobs (from before a restart too) are picked up once the app is ready.
  app.addHook('onReady', async () => generation.start())
  producers.push(() => generation.close())
  // Playlists and day plans: the scheduler sends what a schedule says, when it says it.
  const playlists = createPlaylistService({ db: database.db, storage, minSeconds: config.schedule.minSeconds })
  const schedules = createScheduleService({
    db: database.db,
    storage,
    images,
    link,
    baseUrl: config.baseUrl,
    devices,
    generation: () => generation,
    notify: (userId, message) => notifications.notifier.notifyUser(userId, 'generation', message),
    clock,
    log: app.log,
    poke: () => scheduler.poke(),
  })
  const scheduler = createScheduler({
    db: database.db,
    clock,
    prepare: schedules.prepare,
    fire: schedules.fire,
    flush: schedules.flush,
    log: app.log,
    node: config.nodeId,
    tickMs: config.schedule.tickMs,
    batch: config.schedule.batch,
    leaseMs: config.schedule.leaseMs,
  })
  app.decorate('scheduler', scheduler)
  await app.register(scheduleRoutes, { db: database.db, playlists, schedules })
  await app.register(deviceLogRoutes, { db: database.db, logs: deviceLogs })
  // Devices that poll over HTTP (TRMNL's firmware): the same devices, pipeline and events.
  const trmnl = createTrmnlService({
    db: database.db,
    devices,
    storage,
    baseUrl: config.baseUrl,
    secret: config.authSecret,
    refreshSeconds: config.trmnl.refreshSeconds,
    marginSeconds: config.trmnl.marginSeconds,
    pairingSeconds: config.devices.codeTtl,
    clock,
    firmware: () => firmware,
    reported: downlink.reported,
    polls: { starts: async (id) => (outbox ? outbox.pollStarts(id) : 0), answered: async (id, carried) => outbox?.polled(id, carried) },
    status: async (id, report) => {
      await health.onStatus(id, report)
      await firmware?.onStatus(id, report.firmware)
    },
    onPresence: notifications.notifier.onPresence,
    announce: link.announce,
    log: app.log,
  })
  app.decorate('trmnl', trmnl)
  await app.register(trmnlRoutes, { trmnl, logs: deviceLogs })
  app.addHook('onReady', async () => scheduler.start())
  producers.push(() => scheduler.close())
  // A revocation or any other account change on any instance (sign-out, ban, remove-member, leave,
  // role change, organization deleted, …) clears every instance's cache: each then closes the
  // MQTT connections of apps whose session it ended or that watch a device their user lost. The
  // instance that made the change answers only once its own are closed.
  sessionCache.onClear(async () =>
    app.broker?.revalidateApps().catch((err) => app.log.warn({ err }, 'could not revalidate companion app connections')),
  )
  // Apps' sessions also end by expiry, which no request announces: checked with every sweep.
  startSweeper(
    app,
    [
      () => devices.sweep(),
      () => link.sweep(),
      () => deviceLogs.sweep(),
      () => health.sweep(),
      () => trmnl.sweep(),
      async () => app.broker?.revalidateApps(),
    ],
    config.devices.sweepInterval,
  )
  // Registered last, so it runs first of the onClose hooks (they run in reverse), once the HTTP
  // server has closed: handlers whose clients left finish before anything they use is closed.
  app.addHook('onClose', async () => {
    const left = await handlers.settled()
    if (left) app.log.warn({ handlers: left }, 'closing with requests still running after 15 s')
  })
}

/**
 * Periodic upkeep: stale pending pairings marked expired (reads check expiry too, so this only
 * keeps the table honest), the downlink's bound enforced, expired app sessions disconnected.
 */
function startSweeper(app: FastifyInstance, sweeps: Array<() => Promise<unknown>>, everySeconds: number) {
  const timer = setInterval(() => {
    for (const sweep of sweeps) sweep().catch((err) => app.log.warn({ err }, 'sweep failed'))
  }, everySeconds * 1000)
  timer.unref()
  app.addHook('onClose', async () => clearInterval(timer))
}
