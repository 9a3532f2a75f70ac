import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { webDist } from './build.js'
import { consoleRoutes } from './routes.js'

// The console: a client of the API's routes only, served at / with its deep links.
export const consolePlugin = fp(
  async (app) => {
    const { config } = app
    app.http.setNotFoundFallback(
      await consoleRoutes(app, {
        distDir: webDist,
        baseUrl: config.baseUrl,
        // Images in an object store are shown from presigned URLs on its own origin.
        extraImageOrigins: config.s3 ? [config.s3.endpoint ? new URL(config.s3.endpoint).origin : 'https://*.amazonaws.com'] : [],
      }),
    )
  },
  { name: 'console', dependencies: [...ROUTES_NEED, 'config'] },
)
