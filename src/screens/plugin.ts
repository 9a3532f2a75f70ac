import fp from 'fastify-plugin'
import { ROUTES_NEED } from '../app/routes-need.js'
import { createChromiumRenderer } from './chromium.js'
import { createRenderPool } from './render-pool.js'
import { createScreenRenderer } from './renderers.js'
import { screenRoutes } from './routes.js'
import { createScreenService, type ScreenService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    screens: ScreenService
  }
}

/** A webhook's JSON body: the same bound as a data URL's answer. */
const webhookLimit = (maxBytes: number) => Math.max(1024, maxBytes)

// Screens: templates with data, rendered in workers of their own, on frames that follow them; the
// data URLs are polled from the app's start until the producers stop (before the broker closes).
export const screensPlugin = fp(
  async (app) => {
    const { config } = app
    const settings = config.screens
    const renderer = createScreenRenderer(
      createRenderPool({
        threads: settings.renderWorkers,
        timeoutMs: settings.renderTimeoutMs,
        memoryMb: settings.renderMemoryMb,
      }),
      // Started at the first screen that asks for it: a server whose screens all use Takumi never runs a browser.
      createChromiumRenderer({
        path: settings.chromiumPath,
        pages: settings.chromiumPages,
        timeoutMs: settings.renderTimeoutMs,
        memoryMb: settings.renderMemoryMb,
      }),
    )
    // The worker threads and the shared browser (with its pages) end with the app.
    app.addHook('onClose', async () => renderer.close())
    const screens = createScreenService({
      db: app.database.db,
      storage: app.storage,
      images: app.images,
      renderer,
      link: app.downlink,
      baseUrl: config.baseUrl,
      authSecret: config.authSecret,
      settings,
      clock: app.clock,
      log: app.log,
    })
    app.decorate('screens', screens)
    await app.register(screenRoutes, { screens, webhookBodyLimit: webhookLimit(settings.fetchMaxBytes) })

    let timer: NodeJS.Timeout | undefined
    let running: Promise<unknown> = Promise.resolve()
    let stopped = false
    const tick = () => {
      running = screens
        .pollDue()
        .catch((err) => app.log.error({ err }, 'looking for due screen sources failed'))
        .finally(() => {
          if (!stopped) timer = setTimeout(tick, settings.pollTickMs)
        })
    }
    app.addHook('onReady', async () => {
      timer = setTimeout(tick, 0)
    })
    app.producers.add(async () => {
      stopped = true
      clearTimeout(timer)
      await running
    })
  },
  {
    name: 'screens',
    dependencies: [...ROUTES_NEED, 'config', 'database', 'storage', 'images', 'downlink', 'producers'],
  },
)
