import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { invitationRoutes } from './routes.js'

export const invitationsPlugin = fp(
  async (app) => {
    await app.register(invitationRoutes, { auth: app.auth, db: app.database.db })
  },
  { name: 'invitations', dependencies: [...ROUTES_NEED, 'database'] },
)
