import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { defaultModelId } from '../generation/setup.js'
import { promptRoutes } from './routes.js'
import { createPromptService, type PromptService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    prompts: PromptService
  }
}

export const promptsPlugin = fp(
  async (app) => {
    const { db } = app.database
    const prompts = createPromptService({ db, link: app.downlink, defaultModel: defaultModelId(app.config) })
    app.decorate('prompts', prompts)
    await app.register(promptRoutes, { auth: app.auth, db, prompts })
  },
  { name: 'prompts', dependencies: [...ROUTES_NEED, 'config', 'database', 'downlink'] },
)
