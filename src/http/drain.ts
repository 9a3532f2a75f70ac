import type { FastifyInstance, RouteHandlerMethod } from 'fastify'

/**
 * Keeps count of route handlers still running. Fastify's close waits for open connections, not
 * for handlers: a client that gave up (a load generator stopping, a phone losing signal) closes
 * its socket while the handler still awaits the database, and the database would then be closed
 * under it. `settled()` resolves once every handler started so far has finished.
 *
 * Must be installed before any route is registered (it wraps handlers as they are added).
 */
export function trackHandlers(app: FastifyInstance): { settled(): Promise<void> } {
  const running = new Set<Promise<unknown>>()
  app.addHook('onRoute', (route) => {
    const handler = route.handler as (...args: unknown[]) => unknown
    route.handler = function (this: FastifyInstance, ...args: unknown[]) {
      const result = handler.apply(this, args)
      if (result instanceof Promise) {
        const tracked: Promise<unknown> = result.then(
          () => running.delete(tracked),
          () => running.delete(tracked),
        )
        running.add(tracked)
      }
      return result
    } as RouteHandlerMethod
  })
  return {
    async settled() {
      while (running.size) await Promise.allSettled([...running])
    },
  }
}
