import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { uploadRoutes } from './routes.js'
import { createUploadSender } from './send.js'
import { createUploadService } from './service.js'

export const uploadsPlugin = fp(
  async (app) => {
    const { config, storage } = app
    const { db } = app.database
    const uploads = createUploadService({ store: storage, maxBytes: config.uploads.maxBytes })
    const send = createUploadSender({ db, storage, images: app.images, link: app.downlink, baseUrl: config.baseUrl })
    await app.register(uploadRoutes, { auth: app.auth, db, uploads, send, maxBytes: config.uploads.maxBytes })
  },
  { name: 'uploads', dependencies: [...ROUTES_NEED, 'config', 'database', 'storage', 'images', 'downlink'] },
)
