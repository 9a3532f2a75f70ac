// Builds the notification module from the config: VAPID keys, the push sender (with an extra
// CA when PUSH_CA_FILE is set), the notifier (app.notifier) and its routes.
import { readFileSync } from 'node:fs'
import { Agent } from 'node:https'
import { rootCertificates } from 'node:tls'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { createPushSender } from './push-sender.js'
import { createNotifier, type Notifier } from './service.js'
import { loadVapidKeys } from './vapid.js'

export { notificationRoutes } from './routes.js'
export type { Notifier } from './service.js'

export async function createNotifications(opts: {
  config: Config
  db: Database
  log: FastifyBaseLogger
}): Promise<{ notifier: Notifier; close(): Promise<void> }> {
  const { config } = opts
  const vapid = await loadVapidKeys({ db: opts.db, configured: config.vapid, authSecret: config.authSecret, subject: config.push.subject })
  // The public roots stay trusted next to the extra CA, so real push services keep working.
  const agent = config.push.caFile
    ? new Agent({ keepAlive: true, ca: [...rootCertificates, readFileSync(config.push.caFile, 'utf8')] })
    : new Agent({ keepAlive: true })
  const sender = createPushSender({
    vapid,
    agent,
    maxAttempts: config.push.maxAttempts,
    maxRetryWaitMs: config.push.maxRetryWait * 1000,
    timeoutMs: 15_000,
  })
  const notifier = createNotifier({
    db: opts.db,
    sender,
    vapidPublicKey: vapid.publicKey,
    endpointHosts: config.push.endpointHosts,
    defaultTtl: config.push.ttl,
    maxSubscriptionsPerUser: 20,
    presenceWindowMs: config.push.presenceWindow * 1000,
    log: opts.log,
  })
  return {
    notifier,
    async close() {
      await notifier.close()
      agent.destroy()
    },
  }
}
