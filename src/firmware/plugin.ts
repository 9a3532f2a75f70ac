import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { firmwareRoutes } from './routes.js'
import { checkSigningKey, createFirmwareService, type FirmwareService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    firmware: FirmwareService
  }
}

// Devices of a database trust one signing key: a service with another refuses to start, before
// anything else reads the database.
export const firmwareKeyPlugin = fp(
  async (app) => {
    await checkSigningKey(app.database.db, app.config.firmware.publicKey)
  },
  { name: 'firmware-key', dependencies: ['config', 'database', 'cluster'] },
)

// Offers go out through the durable downlink; status reports and update progress come in through
// the device traffic, from MQTT and TRMNL's polls alike.
export const firmwarePlugin = fp(
  async (app) => {
    const { config, notifier } = app
    const { db } = app.database
    const firmware = createFirmwareService({
      db,
      storage: app.storage,
      link: app.downlink,
      settings: config.firmware,
      clock: app.clock,
      notify: (userId, kind, message) => notifier.notifyUser(userId, kind, message),
      log: app.log,
    })
    app.decorate('firmware', firmware)
    app.deviceTraffic.onStatus((id, report) => firmware.onStatus(id, report.firmware))
    app.deviceTraffic.handleOta((id, report) => firmware.onProgress(id, report))
    await app.register(firmwareRoutes, { db, firmware, maxBytes: config.firmware.maxBytes })
    // What a crash left half done: halts whose failures were recorded, offers recorded but not queued.
    app.addHook('onReady', async () => {
      const done = await firmware.recover().catch((err) => app.log.error({ err }, 'firmware start-up pass failed'))
      if (done && (done.halted || done.requeued)) app.log.warn(done, 'firmware: finished what a crash left half done')
    })
  },
  {
    name: 'firmware',
    dependencies: [...ROUTES_NEED, 'config', 'database', 'storage', 'notifications', 'downlink', 'device-traffic', 'health'],
  },
)
