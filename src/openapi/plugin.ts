import fp from 'fastify-plugin'
import { registerOpenApi } from './register.js'

// Before any other route: the OpenAPI document is collected from routes as they are registered.
export const openApiPlugin = fp(
  async (app) => {
    await registerOpenApi(app, { auth: app.auth })
  },
  { name: 'openapi', dependencies: ['http', 'auth'] },
)
