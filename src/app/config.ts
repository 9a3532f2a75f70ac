import fp from 'fastify-plugin'
import type { Config } from '../config.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    /** The time the scheduler, device health and logs, firmware and TRMNL go by (tests and the benchmark move it). */
    clock: () => Date
  }
}

export const configPlugin = fp<{ config: Config; clock?: () => Date }>(
  async (app, opts) => {
    app.decorate('config', opts.config)
    app.decorate('clock', opts.clock ?? (() => new Date()))
  },
  { name: 'config' },
)
