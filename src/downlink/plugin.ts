import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import type { DeviceLink } from '../devices/sessions.js'
import { createOutbox, type Outbox, outboxRepository } from './outbox.js'
import { downlinkRoutes } from './routes.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The durable downlink: numbered, stored messages to devices (deviceLink is the same object). */
    downlink: Outbox
    deviceLink: DeviceLink
  }
}

// Every message to a device goes through the outbox, which hands it to the transport once it is
// stored; what the transport reports back (acknowledgements, sessions) reaches it through the
// device traffic.
export const downlinkPlugin = fp(
  async (app) => {
    const outbox = createOutbox({
      repo: outboxRepository(app.database.db),
      transport: app.deviceTransport,
      limits: app.config.downlink,
      log: app.log,
      // One instance on the embedded broker records every message itself (a cluster shares Redis;
      // instances behind an external broker may share the database without it).
      soleWriter: !app.config.redisUrl && !app.config.mqtt.external,
    })
    app.deviceTraffic.attachDownlink(outbox)
    app.decorate('downlink', outbox)
    app.decorate('deviceLink', outbox)
    // Acknowledgements received before the broker closed are written before the database closes.
    app.addHook('onClose', async () => outbox.settled())
  },
  { name: 'downlink', dependencies: ['config', 'database', 'broker', 'device-traffic'] },
)

// Apart from the outbox, which the devices and firmware need: the routes keep their place in the API document.
export const downlinkRoutesPlugin = fp(
  async (app) => {
    await app.register(downlinkRoutes, { auth: app.auth, db: app.database.db })
  },
  { name: 'downlink-routes', dependencies: [...ROUTES_NEED, 'database'] },
)
