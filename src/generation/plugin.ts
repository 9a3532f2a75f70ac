import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { demoRoutes } from './demo.js'
import { generationRoutes } from './routes.js'
import { createGenerationService, type GenerationService } from './service.js'
import { buildProviders } from './setup.js'

declare module 'fastify' {
  interface FastifyInstance {
    generation: GenerationService
  }
}

export const generationPlugin = fp(
  async (app) => {
    const { config, notifier, sessionCache, storage, images } = app
    const { db } = app.database
    const providers = buildProviders(config)
    const generation = createGenerationService({
      db,
      config,
      storage,
      images,
      link: app.downlink,
      prompts: app.prompts,
      providers,
      log: app.log,
      notify: () => (userId, kind, message) => notifier.notifyUser(userId, kind, message),
      balanceChanged: () => sessionCache.clearAll(),
    })
    app.decorate('generation', generation)
    await app.register(generationRoutes, {
      auth: app.auth,
      db,
      generation,
      baseUrl: config.baseUrl,
      providers: new Set(providers.keys()),
      balanceChanged: () => sessionCache.clearAll(),
    })
    // Unfinished jobs (from before a restart too) are picked up once the app is ready.
    app.addHook('onReady', async () => generation.start())
    app.producers.add(() => generation.close())
  },
  {
    name: 'generation',
    dependencies: [...ROUTES_NEED, 'config', 'database', 'storage', 'images', 'downlink', 'prompts', 'notifications', 'producers'],
  },
)

export const demoPlugin = fp(
  async (app) => {
    const { config } = app
    if (config.demoEnabled)
      await app.register(demoRoutes, { db: app.database.db, storage: app.storage, images: app.images, baseUrl: config.baseUrl })
  },
  { name: 'demo', dependencies: [...ROUTES_NEED, 'config', 'database', 'storage', 'images'] },
)
