import type { FastifyInstance, RouteHandlerMethod } from 'fastify'

/**
 * Keeps count of route handlers still running. Fastify's close waits for open connections, not
 * for handlers: a client that gave up (a load generator stopping, a phone losing signal) closes
 * its socket while the handler still awaits the database, and the database would then be closed
 * under it. `settled()` resolves once every handler started so far has finished.
 *
 * Must be installed before any route is registered (it wraps handlers as they are added).
 */
export function trackHandlers(app: FastifyInstance): { settled(limitMs?: number): Promise<number> } {
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
    /**
     * Waits for the running handlers, at most `limitMs` (a handler stuck on a stalled peer must
     * not hold shutdown forever); resolves with how many were still running then.
     */
    async settled(limitMs = 15_000) {
      let timer: NodeJS.Timeout | undefined
      // Not unref'd: close must end (here at the limit), not leave the process on a pending promise.
      const limit = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, limitMs)
      })
      const all = (async () => {
        while (running.size) await Promise.allSettled([...running])
      })()
      await Promise.race([all, limit])
      clearTimeout(timer)
      return running.size
    },
  }
}
