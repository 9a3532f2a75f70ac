import fp from 'fastify-plugin'
import { createHealthService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    health: ReturnType<typeof createHealthService>
  }
}

// Status reports (MQTT's up/status, TRMNL's polls) feed device health: battery low, silence.
export const healthPlugin = fp(
  async (app) => {
    const { notifier } = app
    const health = createHealthService({
      db: app.database.db,
      clock: app.clock,
      defaultIntervalSeconds: app.config.health.defaultIntervalSeconds,
      notify: (userId, kind, message) => notifier.notifyUser(userId, kind, message),
    })
    app.decorate('health', health)
    app.deviceTraffic.onStatus((id, report) => health.onStatus(id, report))
  },
  { name: 'health', dependencies: ['config', 'database', 'notifications', 'device-traffic'] },
)
