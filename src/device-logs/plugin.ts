import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { deviceLogRoutes } from './routes.js'
import { createDeviceLogService, type DeviceLogService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    deviceLogs: DeviceLogService
  }
}

// Device logs arrive over MQTT (up/log) as well as HTTP: the service exists before the broker.
export const deviceLogsPlugin = fp(
  async (app) => {
    app.decorate('deviceLogs', createDeviceLogService({ db: app.database.db, limits: app.config.deviceLogs, clock: app.clock }))
  },
  { name: 'device-logs', dependencies: ['config', 'database'] },
)

// Apart from the service: the routes keep their place in the API document.
export const deviceLogRoutesPlugin = fp(
  async (app) => {
    await app.register(deviceLogRoutes, { db: app.database.db, logs: app.deviceLogs })
  },
  { name: 'device-log-routes', dependencies: [...ROUTES_NEED, 'database', 'device-logs'] },
)
