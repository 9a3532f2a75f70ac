import fp from 'fastify-plugin'
import { createMailer, type Mailer } from './mailer.js'

declare module 'fastify' {
  interface FastifyInstance {
    mailer: Mailer
  }
}

export const mailerPlugin = fp(
  async (app) => {
    const { config } = app
    const mailer = createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, log: app.log })
    app.decorate('mailer', mailer)
    app.addHook('onClose', async () => mailer.close())
  },
  { name: 'mailer', dependencies: ['config'] },
)
