import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { createObjectStore } from './index.js'
import { fileRoutes } from './routes.js'
import type { ObjectStore } from './store.js'

declare module 'fastify' {
  interface FastifyInstance {
    storage: ObjectStore
  }
}

export const storagePlugin = fp(
  async (app) => {
    const storage = await createObjectStore(app.config)
    app.decorate('storage', storage)
    app.addHook('onClose', async () => storage.close())
  },
  { name: 'storage', dependencies: ['config'] },
)

// The filesystem store's presigned links point here; S3 answers its own.
export const fileRoutesPlugin = fp(
  async (app) => {
    const { config, storage } = app
    if (storage.kind === 'fs')
      await app.register(fileRoutes, { store: storage, secret: config.authSecret, maxBytes: config.uploads.maxBytes })
  },
  { name: 'file-routes', dependencies: [...ROUTES_NEED, 'config', 'storage'] },
)
