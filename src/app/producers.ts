import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /** Producers of device messages (generation, the scheduler): stopped, in the order added, before the broker closes. */
    producers: { add(stop: () => Promise<void>): void }
  }
}

// Registered before the broker: preClose hooks run in the order they were added, so these stop first.
export const producersPlugin = fp(
  async (app) => {
    const stops: Array<() => Promise<void>> = []
    app.addHook('preClose', async () => {
      for (const stop of stops) await stop()
    })
    app.decorate('producers', { add: (stop: () => Promise<void>) => void stops.push(stop) })
  },
  { name: 'producers' },
)
