import fp from 'fastify-plugin'

/**
 * Periodic upkeep: stale pending pairings marked expired (reads check expiry too, so this only
 * keeps the table honest), the downlink's bound enforced, expired app sessions disconnected
 * (apps' sessions also end by expiry, which no request announces).
 */
export const sweeperPlugin = fp(
  async (app) => {
    const sweeps: Array<() => Promise<unknown>> = [
      () => app.devices.sweep(),
      () => app.downlink.sweep(),
      () => app.deviceLogs.sweep(),
      () => app.health.sweep(),
      () => app.trmnl.sweep(),
      async () => app.broker?.revalidateApps(),
    ]
    const timer = setInterval(() => {
      for (const sweep of sweeps) sweep().catch((err) => app.log.warn({ err }, 'sweep failed'))
    }, app.config.devices.sweepInterval * 1000)
    timer.unref()
    app.addHook('onClose', async () => clearInterval(timer))
  },
  { name: 'sweeper', dependencies: ['config', 'devices', 'downlink', 'device-logs', 'health', 'trmnl', 'broker'] },
)
