import fp from 'fastify-plugin'
import { joinCluster } from './membership.js'

// Before anything reads what another node wrote (sessions, keys, images): same cluster, same everything.
export const clusterPlugin = fp(
  async (app) => {
    const { config, redis } = app
    if (!redis) return
    const membership = await joinCluster({
      redis,
      db: app.database.db,
      storage: app.storage,
      authSecret: config.authSecret,
      firmwareKey: config.firmware.publicKey,
      refreshMs: config.mqtt.heartbeatMs,
    })
    app.addHook('onClose', async () => membership.close())
  },
  { name: 'cluster', dependencies: ['config', 'database', 'redis', 'storage'] },
)
