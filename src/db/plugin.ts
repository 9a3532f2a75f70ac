import fp from 'fastify-plugin'
import { initPgliteDir, openDatabase, type DatabaseHandle } from './client.js'

declare module 'fastify' {
  interface FastifyInstance {
    database: DatabaseHandle
  }
}

// Registered before everything that uses it: its onClose runs after theirs (onClose hooks run in reverse).
export const databasePlugin = fp(
  async (app) => {
    const { config } = app
    if (!config.databaseUrl) await initPgliteDir(config.dataDir)
    const database = openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      pgliteSharedBuffers: config.pgliteSharedBuffers,
    })
    app.decorate('database', database)
    app.addHook('onClose', async () => database.close())
    await database.migrate()
  },
  { name: 'database', dependencies: ['config'] },
)
