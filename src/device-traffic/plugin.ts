import fp from 'fastify-plugin'
import { createDeviceTraffic, type DeviceTraffic } from './bus.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The seam between the transports and the domains answering them (see bus.ts). */
    deviceTraffic: DeviceTraffic
  }
}

export const deviceTrafficPlugin = fp(
  async (app) => {
    app.decorate('deviceTraffic', createDeviceTraffic())
  },
  { name: 'device-traffic' },
)
