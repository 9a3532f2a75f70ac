import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import type { DeviceLink } from '../devices/sessions.js'
import { mqttAuthRoutes } from './auth-routes.js'
import type { DeviceBroker } from './device-broker.js'
import { rabbitmqAuthRoutes } from './rabbitmq-auth-routes.js'
import { startBroker } from './start.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The embedded broker; absent with an external one (MQTT_URL). */
    broker?: DeviceBroker
    /** What publishes to devices and disconnects them: the embedded broker or the external one. The durable downlink sends through it. */
    deviceTransport: DeviceLink
    /** The bound MQTT TCP port once the app is ready (embedded broker only). */
    mqttPort?: number
    mqttTlsPort?: number
    /**
     * Reads MQTT_TLS_CERT and MQTT_TLS_KEY again (on SIGHUP: a renewed certificate without a
     * restart); throws, keeping the previous pair, when they cannot be read or do not fit.
     */
    reloadMqttTls?: () => void
  }
}

// After the producers (their preClose stops them before the broker's closes it) and before the
// downlink and firmware, which send through it: what the broker hands them goes through the
// device traffic, which they attach to once they exist.
export const brokerPlugin = fp(
  async (app) => {
    const { notifier, deviceTraffic } = app
    const transport = await startBroker(app, {
      config: app.config,
      db: app.database.db,
      auth: app.auth,
      redis: app.redis,
      onPresence: notifier.onPresence,
      downlink: deviceTraffic.downlink,
      uplink: { logs: app.deviceLogs.ingest, status: deviceTraffic.status, ota: deviceTraffic.ota },
    })
    app.decorate('deviceTransport', transport)
    // After the broker's own preClose: presence notifications it started finish before the database closes.
    app.addHook('preClose', async () => notifier.idle())
    // A revocation or any other account change on any instance (sign-out, ban, remove-member, leave,
    // role change, organization deleted, …) clears every instance's cache: each then closes the
    // MQTT connections of apps whose session it ended or that watch a device their user lost. The
    // instance that made the change answers only once its own are closed.
    app.sessionCache.onClear(async () =>
      app.broker?.revalidateApps().catch((err) => app.log.warn({ err }, 'could not revalidate companion app connections')),
    )
  },
  {
    name: 'broker',
    dependencies: ['config', 'database', 'redis', 'auth', 'notifications', 'producers', 'device-traffic', 'device-logs', 'health'],
  },
)

// The external brokers' hooks exist only where one is configured (MQTT_AUTH_SECRET): elsewhere
// they are routes of another configuration, a 404 like any unknown path (a 503 reads as an outage).
export const mqttAuthRoutesPlugin = fp(
  async (app) => {
    const { auth, config, redis } = app
    const secret = config.mqtt.authSecret
    if (!secret) return
    const { db } = app.database
    await app.register(mqttAuthRoutes, { auth, db, config, secret, redis })
    await app.register(rabbitmqAuthRoutes, { auth, db, config, secret })
  },
  { name: 'mqtt-auth-routes', dependencies: [...ROUTES_NEED, 'config', 'database', 'redis'] },
)
