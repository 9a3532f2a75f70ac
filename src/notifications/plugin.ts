import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { createNotifications, notificationRoutes, type Notifier } from './index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Push notifications: notifyUser(userId, kind, { title, body, url }) for other modules. */
    notifier: Notifier
  }
}

export const notificationsPlugin = fp(
  async (app) => {
    const notifications = await createNotifications({ config: app.config, db: app.database.db, log: app.log })
    app.decorate('notifier', notifications.notifier)
    app.addHook('onClose', async () => notifications.close())
  },
  { name: 'notifications', dependencies: ['config', 'database'] },
)

// Apart from the service, which the broker and device health need long before: the routes keep their place in the API document.
export const notificationRoutesPlugin = fp(
  async (app) => {
    await app.register(notificationRoutes, { auth: app.auth, db: app.database.db, notifier: app.notifier })
  },
  { name: 'notification-routes', dependencies: [...ROUTES_NEED, 'database', 'notifications'] },
)
