import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { createConversionPool, type ConversionPool } from './conversion-pool.js'
import { imageRoutes } from './routes.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Converts images for displays off the event loop, fairly between accounts. */
    images: ConversionPool
  }
}

// Display conversions run in worker threads, each account's in its own queue, in turn.
export const imagesPlugin = fp(
  async (app) => {
    const images = createConversionPool({ threads: app.config.imageWorkers })
    app.decorate('images', images)
    app.addHook('onClose', async () => images.close())
  },
  { name: 'images', dependencies: ['config'] },
)

export const imageRoutesPlugin = fp(
  async (app) => {
    await app.register(imageRoutes, { db: app.database.db, storage: app.storage })
  },
  { name: 'image-routes', dependencies: [...ROUTES_NEED, 'database', 'storage'] },
)
