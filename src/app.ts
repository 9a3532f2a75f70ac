// Builds the whole service from a validated Config. The server and every test use this.
// The app is the list of plugins below, in the order they are registered: each declares the
// plugins it needs (fastify-plugin's `dependencies`, checked at registration) and decorates the
// instance with what it provides. docs/architecture.md lists them.
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import type {} from '@fastify/swagger'
import { configPlugin } from './app/config.js'
import { producersPlugin } from './app/producers.js'
import { sweeperPlugin } from './app/sweeper.js'
import { authPlugin, authRoutesPlugin } from './auth/plugin.js'
import { clusterPlugin } from './cluster/plugin.js'
import { persistGenerated, type Config } from './config.js'
import { databasePlugin } from './db/plugin.js'
import { deviceLogRoutesPlugin, deviceLogsPlugin } from './device-logs/plugin.js'
import { deviceTrafficPlugin } from './device-traffic/plugin.js'
import { devicesPlugin, verificationPagePlugin } from './devices/plugin.js'
import { downlinkPlugin, downlinkRoutesPlugin } from './downlink/plugin.js'
import { firmwareKeyPlugin, firmwarePlugin } from './firmware/plugin.js'
import { demoPlugin, generationPlugin } from './generation/plugin.js'
import { healthPlugin } from './health/plugin.js'
import { clientErrorHandler } from './http/client-errors.js'
import { closeUnusedConnectionsOnClose } from './http/connections.js'
import { drainPlugin, httpPlugin, requestPolicyPlugin } from './http/plugin.js'
import { imageRoutesPlugin, imagesPlugin } from './images/plugin.js'
import { invitationsPlugin } from './invitations/plugin.js'
import { mailerPlugin } from './mail/plugin.js'
import { brokerPlugin, mqttAuthRoutesPlugin } from './mqtt/plugin.js'
import { notificationRoutesPlugin, notificationsPlugin } from './notifications/plugin.js'
import { openApiPlugin } from './openapi/plugin.js'
import { promptsPlugin } from './prompts/plugin.js'
import { redisPlugin } from './redis/plugin.js'
import { schedulerPlugin, schedulesPlugin } from './schedules/plugin.js'
import { screensPlugin } from './screens/plugin.js'
import { fileRoutesPlugin, storagePlugin } from './storage/plugin.js'
import { trmnlPlugin } from './trmnl/plugin.js'
import { uploadsPlugin } from './uploads/plugin.js'
import { consolePlugin } from './web/plugin.js'

export type AppOptions = {
  /** The time the scheduler goes by: tests and the benchmark move it instead of waiting. */
  clock?: () => Date
}

/**
 * The order is the order of hooks and routes. onClose hooks run in reverse, so what is registered
 * first (the database) closes last; preClose hooks run in order, so the producers stop before the
 * broker closes. Routes are registered in the order the API document lists them, which is why
 * some domains register their routes in a plugin of their own, later than their service.
 */
const plugins: FastifyPluginAsync[] = [
  httpPlugin,
  databasePlugin,
  redisPlugin,
  mailerPlugin,
  storagePlugin,
  imagesPlugin,
  clusterPlugin,
  firmwareKeyPlugin,
  authPlugin,
  openApiPlugin,
  requestPolicyPlugin,
  authRoutesPlugin,
  notificationsPlugin,
  producersPlugin,
  deviceTrafficPlugin,
  healthPlugin,
  deviceLogsPlugin,
  brokerPlugin,
  downlinkPlugin,
  firmwarePlugin,
  devicesPlugin,
  downlinkRoutesPlugin,
  verificationPagePlugin,
  mqttAuthRoutesPlugin,
  notificationRoutesPlugin,
  fileRoutesPlugin,
  uploadsPlugin,
  invitationsPlugin,
  consolePlugin,
  promptsPlugin,
  generationPlugin,
  imageRoutesPlugin,
  demoPlugin,
  screensPlugin,
  schedulesPlugin,
  deviceLogRoutesPlugin,
  trmnlPlugin,
  schedulerPlugin,
  sweeperPlugin,
  // Last: its onClose runs first, waiting for running handlers before anything they use closes.
  drainPlugin,
]

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
    // Plugins that run migrations or open connections can take minutes on a busy machine (a PGlite
    // migration at a load of 30 took more than a minute): a slow start is not a failed one. Every
    // plugin is async, so none can hang by forgetting to call `done`.
    pluginTimeout: 0,
    clientErrorHandler,
  })
  closeUnusedConnectionsOnClose(app.server)
  try {
    await app.register(configPlugin, { config, clock: opts.clock })
    for (const plugin of plugins) await app.register(plugin)
  } catch (err) {
    // Whatever was opened before the failure (database, Redis, broker) is closed again.
    await app.close().catch(() => {})
    throw err
  }
  return app
}
