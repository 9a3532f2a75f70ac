import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { DOCS_PATH } from '../openapi/register.js'
import { createAuth, type Auth } from './auth.js'
import { attachSessionCache } from './guard.js'
import { mountAuth } from './mount.js'
import { installRouteAuth } from './route-auth.js'
import { createSessionCache, type SessionCache } from './session-cache.js'
import { sessionRoutes } from './session-routes.js'

declare module 'fastify' {
  interface FastifyInstance {
    auth: Auth
    sessionCache: SessionCache
    /** Listens for devices deleted with their account (the broker plugin, built after auth, attaches). */
    onAccountDevicesDeleted(listener: (deviceIds: string[]) => Promise<void>): void
  }
}

// Before any route: each declares who may call it, checked before its body is read.
export const authPlugin = fp(
  async (app) => {
    const { config, redis } = app
    const { db } = app.database
    const deletedListeners: Array<(deviceIds: string[]) => Promise<void>> = []
    app.decorate('onAccountDevicesDeleted', (listener: (deviceIds: string[]) => Promise<void>) => {
      deletedListeners.push(listener)
    })
    const auth = createAuth({
      config,
      db,
      mailer: app.mailer,
      redis,
      log: app.log,
      devicesDeleted: async (ids) => {
        for (const listener of deletedListeners) await listener(ids)
      },
    })
    app.decorate('auth', auth)
    const sessionCache = await createSessionCache({
      ttlMs: config.sessionCacheTtlMs,
      redis,
      onError: (err) => app.log.warn({ err }, 'session cache'),
    })
    attachSessionCache(auth, sessionCache, db)
    app.decorate('sessionCache', sessionCache)
    app.addHook('onClose', async () => sessionCache.close())
    installRouteAuth(app, {
      auth,
      db,
      docsPath: DOCS_PATH,
      allowedOrigins: new Set(config.cookieOrigins),
      ownOrigin: new URL(config.baseUrl).origin,
    })
  },
  // After the signing-key check and the cluster: sessions and keys are read only in a database and cluster that fit.
  { name: 'auth', dependencies: ['config', 'database', 'redis', 'mailer', 'cluster', 'firmware-key'] },
)

export const authRoutesPlugin = fp(
  async (app) => {
    const { auth, config, sessionCache } = app
    await app.register(mountAuth, {
      auth,
      baseUrl: config.baseUrl,
      secret: config.authSecret,
      bodyLimit: config.bodyLimit,
      onAccountChange: () => sessionCache.clearAll(),
    })
    await app.register(sessionRoutes, { auth, db: app.database.db })
  },
  { name: 'auth-routes', dependencies: [...ROUTES_NEED, 'config', 'database'] },
)
