import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { trmnlRoutes } from './routes.js'
import { createTrmnlService, type TrmnlService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    trmnl: TrmnlService
  }
}

// Devices that poll over HTTP (TRMNL's firmware): the same devices, pipeline and events. Their
// status reports go the way MQTT's do, through the device traffic (device health, then firmware).
export const trmnlPlugin = fp(
  async (app) => {
    const { config, downlink, firmware } = app
    const trmnl = createTrmnlService({
      db: app.database.db,
      devices: app.devices,
      storage: app.storage,
      baseUrl: config.baseUrl,
      secret: config.authSecret,
      refreshSeconds: config.trmnl.refreshSeconds,
      marginSeconds: config.trmnl.marginSeconds,
      pairingSeconds: config.devices.codeTtl,
      clock: app.clock,
      firmware: () => firmware,
      reported: downlink.reported,
      polls: { starts: downlink.pollStarts, answered: downlink.polled },
      status: app.deviceTraffic.status,
      onPresence: app.notifier.onPresence,
      announce: downlink.announce,
      credentialsRevoked: downlink.credentialsRevoked,
      log: app.log,
    })
    app.decorate('trmnl', trmnl)
    await app.register(trmnlRoutes, { trmnl, logs: app.deviceLogs })
  },
  {
    name: 'trmnl',
    dependencies: [
      ...ROUTES_NEED,
      'config',
      'database',
      'devices',
      'storage',
      'downlink',
      'firmware',
      'device-traffic',
      'notifications',
      'device-logs',
    ],
  },
)
