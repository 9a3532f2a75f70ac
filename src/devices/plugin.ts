import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { memoryCounters, redisCounters } from '../http/counters.js'
import { deviceRoutes } from './routes.js'
import { createDeviceService, type DeviceService } from './service.js'
import { verificationPage } from './verification-page.js'

declare module 'fastify' {
  interface FastifyInstance {
    devices: DeviceService
  }
}

export const devicesPlugin = fp(
  async (app) => {
    const { config, redis } = app
    const devices = createDeviceService({
      db: app.database.db,
      config,
      counters: redis ? redisCounters(redis) : memoryCounters(),
      link: app.downlink,
      accessChanged: async () =>
        app.broker?.revalidateAppsEverywhere().catch((err) => app.log.warn({ err }, 'could not revalidate companion app connections')),
    })
    if (config.devices.autoApproveUserEmail)
      app.log.warn(
        { email: config.devices.autoApproveUserEmail },
        'DEVICE_AUTO_APPROVE_USER_EMAIL is set: every new device is claimed for this account (development only)',
      )
    app.decorate('devices', devices)
    await app.register(deviceRoutes, { auth: app.auth, db: app.database.db, devices })
  },
  { name: 'devices', dependencies: [...ROUTES_NEED, 'config', 'database', 'redis', 'downlink', 'broker'] },
)

// Apart from the device routes: the page keeps its place in the API document (after the downlink's routes).
export const verificationPagePlugin = fp(
  async (app) => {
    await app.register(verificationPage)
  },
  { name: 'verification-page', dependencies: ROUTES_NEED },
)
