import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { createPlaylistService } from './playlists.js'
import { scheduleRoutes } from './routes.js'
import { createScheduler } from './scheduler.js'
import { createScheduleService, type ScheduleService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    schedules: ScheduleService
    /** Called whenever a plan was saved: the scheduler listens, to look at once instead of at its next tick. */
    onPlanSaved(listener: () => void): void
    scheduler: ReturnType<typeof createScheduler>
  }
}

// Playlists and day plans: what a schedule says, and when.
export const schedulesPlugin = fp(
  async (app) => {
    const { config, notifier, storage, generation } = app
    const { db } = app.database
    const planSaved: Array<() => void> = []
    const playlists = createPlaylistService({ db, storage, minSeconds: config.schedule.minSeconds })
    const schedules = createScheduleService({
      db,
      storage,
      images: app.images,
      link: app.downlink,
      baseUrl: config.baseUrl,
      devices: app.devices,
      generation: () => generation,
      screens: app.screens,
      notify: (userId, message) => notifier.notifyUser(userId, 'generation', message),
      clock: app.clock,
      log: app.log,
      poke: () => {
        for (const listener of planSaved) listener()
      },
    })
    app.decorate('schedules', schedules)
    app.decorate('onPlanSaved', (listener: () => void) => void planSaved.push(listener))
    await app.register(scheduleRoutes, { db: app.database.db, playlists, schedules })
  },
  {
    name: 'schedules',
    dependencies: [
      ...ROUTES_NEED,
      'config',
      'database',
      'storage',
      'images',
      'downlink',
      'devices',
      'generation',
      'notifications',
      'screens',
    ],
  },
)

// The scheduler sends what the schedules say, when they say it; built from their turns, it starts
// once the app is ready and stops before the broker closes.
export const schedulerPlugin = fp(
  async (app) => {
    const { config, schedules } = app
    const scheduler = createScheduler({
      db: app.database.db,
      clock: app.clock,
      prepare: schedules.prepare,
      fire: schedules.fire,
      flush: schedules.flush,
      log: app.log,
      node: config.nodeId,
      tickMs: config.schedule.tickMs,
      batch: config.schedule.batch,
      leaseMs: config.schedule.leaseMs,
    })
    app.decorate('scheduler', scheduler)
    app.onPlanSaved(() => scheduler.poke())
    app.addHook('onReady', async () => scheduler.start())
    app.producers.add(() => scheduler.close())
  },
  { name: 'scheduler', dependencies: ['config', 'database', 'schedules', 'producers'] },
)
