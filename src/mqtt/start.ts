// Starts the embedded broker with the app: TCP on MQTT_HOST:MQTT_PORT (and TLS on
// MQTT_TLS_HOST:MQTT_TLS_PORT) once the app is ready, WebSocket at /mqtt on the HTTP server,
// closed before the database on shutdown.
import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { createDeviceBroker, type DeviceBroker } from './device-broker.js'
import type { PresenceChange } from './contract.js'
import type { DownlinkHooks } from './downlink-hooks.js'
import type { DomainUplinkHooks } from './uplink.js'
import { redisClusterParts } from '../../broker/cluster.js'
import type { Auth } from '../auth/auth.js'
import { ConfigError, type Config } from '../config.js'
import type { Database } from '../db/client.js'
import type { DeviceLink } from '../devices/sessions.js'
import type { RedisHandle } from '../redis/client.js'
import { seqOf } from '../downlink/outbox.js'
import { forwardedAddress } from '../http/client-address.js'

export async function startBroker(
  app: FastifyInstance,
  deps: {
    config: Config
    db: Database
    auth: Auth
    redis?: RedisHandle
    onPresence?: (change: PresenceChange) => void
    downlink: DownlinkHooks
    /** What the domains do with uplink besides the downlink's part: log batches, status reports. */
    uplink?: DomainUplinkHooks
  },
): Promise<DeviceLink> {
  const { config } = deps
  if (config.mqtt.external) {
    const ext = config.mqtt.external
    // The MQTT client library is needed only in this mode.
    const { connectExternalBroker } = await import('./external.js')
    const link = await connectExternalBroker({
      url: ext.url,
      username: ext.username,
      password: ext.password,
      clientId: `dps-service-${config.mqtt.brokerId}`,
      db: deps.db,
      log: app.log,
      downlink: deps.downlink,
      uplink: deps.uplink,
    })
    const { amqpUrl, managementUrl } = config.mqtt.rabbitmq
    // RabbitMQ's presence and kicks (docs/rabbitmq.md), loaded only when configured.
    const full =
      amqpUrl || managementUrl
        ? await (await import('./rabbitmq-link.js')).withRabbitMQ(link, {
            config: config.mqtt.rabbitmq,
            db: deps.db,
            log: app.log,
            onPresence: deps.onPresence,
          })
        : link
    app.onAccountDevicesDeleted(async (ids) => full.devicesDeleted?.(ids))
    app.addHook('preClose', async () => full.close())
    return full
  }
  const cluster = config.redisUrl
    ? redisClusterParts(config.redisUrl, config.redisPrefix, (err, part) =>
        app.log.warn({ err, part }, 'MQTT cluster: Redis error (reconnecting)'),
      )
    : undefined
  const broker = await createDeviceBroker({
    id: config.mqtt.brokerId,
    db: deps.db,
    auth: deps.auth,
    limits: config.mqtt.limits,
    log: app.log,
    mq: cluster?.mq,
    persistence: cluster?.persistence,
    offlineQueueLimit: config.mqtt.offlineQueueLimit,
    heartbeatMs: cluster ? config.mqtt.heartbeatMs : undefined,
    tls: config.mqtt.tls ? { cert: readFileSync(config.mqtt.tls.certFile), key: readFileSync(config.mqtt.tls.keyFile) } : undefined,
    onPresence: deps.onPresence,
    downlink: { ...deps.downlink, seqOf },
    queuedFor: cluster?.queuedFor,
    webOrigins: config.cookieOrigins,
    uplink: deps.uplink,
  })
  app.decorate('broker', broker)
  app.decorate('mqttPort', undefined as number | undefined)
  app.decorate('mqttTlsPort', undefined as number | undefined)
  broker.server.attachWebSocket(app.server, '/mqtt', forwardedAddress(config.trustProxy))
  const { tls } = config.mqtt
  if (tls) {
    app.decorate('reloadMqttTls', () =>
      broker.server.setTlsCredentials({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }),
    )
  }
  app.addHook('onReady', async () => {
    try {
      app.mqttPort = await listenMqtt(broker, config, app.log)
      if (tls) app.mqttTlsPort = await broker.listenTls(tls.port, tls.host)
      // Devices are handed the port bound by the listener their URL names (MQTT_PORT=0 or
      // MQTT_TLS_PORT=0 pick a free one; a taken default moves on), not the one configured.
      const bound = tls ? app.mqttTlsPort : app.mqttPort
      if (bound !== undefined) tellDevices(config, bound)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new ConfigError(
          `An MQTT port (MQTT_PORT ${config.mqttPort}${config.mqtt.tls ? ` or MQTT_TLS_PORT ${config.mqtt.tls.port}` : ''}) is already in use: set it to a free port (0 picks one)`,
        )
      }
      throw err
    }
  })
  app.addHook('preClose', async () => {
    await broker.close()
    // aedes closes its emitter but leaves the persistence connection to its owner.
    await cluster?.close()
  })
  return broker
}

/** The port in the MQTT URL devices get with their credentials, unless MQTT_PUBLIC_URL names it. */
function tellDevices(config: Config, bound: number) {
  if (config.devices.mqttPublicUrlIsDefault) config.devices.mqttPublicUrl = config.devices.mqttPublicUrl.replace(/:\d+$/, `:${bound}`)
}

/** Ports tried after the default 1883 when it is taken and MQTT_PORT was not set. */
const FALLBACK_PORTS = 16

/**
 * Listens on MQTT_PORT. Left at its default and taken (another broker on this machine), the next
 * free port above it is used, the log says which, and devices are given it in their credentials
 * (unless MQTT_PUBLIC_URL names the URL devices use).
 */
async function listenMqtt(broker: DeviceBroker, config: Config, log: { warn: (msg: string) => void }): Promise<number> {
  try {
    return await broker.listen(config.mqttPort, config.mqtt.host)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || !config.mqttPortIsDefault) throw err
  }
  for (let port = config.mqttPort + 1; port <= config.mqttPort + FALLBACK_PORTS; port++) {
    try {
      const bound = await broker.listen(port, config.mqtt.host)
      log.warn(
        `MQTT port ${config.mqttPort} is in use (another MQTT broker, such as Mosquitto, runs here): listening on ${bound} instead, and devices are told so. Set MQTT_PORT to choose a port.`,
      )
      return bound
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err
    }
  }
  throw Object.assign(new Error(`MQTT ports ${config.mqttPort}–${config.mqttPort + FALLBACK_PORTS} are all in use`), { code: 'EADDRINUSE' })
}
