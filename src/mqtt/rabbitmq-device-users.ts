// Devices as RabbitMQ internal users, so RabbitMQ decides their CONNECT, SUBSCRIBE and publishes
// itself (auth chain: internal first, our HTTP routes second) instead of asking the service each
// time. A device's secret is stored as its SHA-256 only, and RabbitMQ's password hashes (salted)
// cannot be made from that: a device is provisioned where the service sees its secret in clear,
// when it is issued and at a connect our HTTP routes accept (devices paired before, moved over at
// their next connect). docs/rabbitmq.md, "Devices as internal users".
import type { Database } from '../db/client.js'
import { matchesHash } from '../devices/codes.js'
import { findDeviceCredentials } from '../devices/repository.js'
import type { DeviceLookup } from './credentials.js'
import type { RabbitManagement } from './rabbitmq-management.js'
import { devicePermissions } from './rabbitmq-rules.js'

export type RabbitDeviceUsers = {
  /** Makes the device an internal user with `secret`; resolves once that is done (or failed and logged). */
  provision(deviceId: string, secret: string): Promise<void>
  /** Removes the device's internal user: from then on RabbitMQ asks our routes, which read the device. */
  remove(deviceId: string): Promise<void>
  /**
   * Deletes the users of devices that are gone or revoked some other way than through the
   * service's revocation (a deleted account takes its devices with it in the database alone).
   * Resolves with how many went.
   */
  sweep(db: Database): Promise<number>
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const SWEEP_BATCH = 500

/** Management calls in flight at once: a reconnect storm of unprovisioned devices queues behind them. */
const CONCURRENCY = 8

export function rabbitDeviceUsers(deps: {
  management: RabbitManagement
  vhost: string
  lookup: DeviceLookup
  log: { warn: (o: object, m: string) => void }
}): RabbitDeviceUsers {
  const { management, vhost, lookup, log } = deps
  // A device connecting again while its provisioning waits is provisioned once.
  const pending = new Map<string, Promise<void>>()
  let running = 0
  const waiting: Array<() => void> = []
  const slot = async () => {
    if (running >= CONCURRENCY) await new Promise<void>((resolve) => waiting.push(resolve))
    running++
  }
  const release = () => {
    running--
    waiting.shift()?.()
  }

  async function provisionNow(deviceId: string, secret: string) {
    await slot()
    try {
      await management.putUser(deviceId, secret, vhost, devicePermissions(deviceId))
      // A revocation may have come between: it deletes the user after revoking the secret, so a
      // user created after that delete must go again. Read after the user exists, the device
      // still holding this secret means any later revocation's delete comes after ours.
      const dev = await lookup(deviceId)
      if (!matchesHash(secret, dev?.secretHash)) await management.deleteUser(deviceId)
    } catch (err) {
      // The device still connects through our HTTP routes, and is provisioned at its next connect.
      log.warn({ err, deviceId }, 'RabbitMQ: could not provision the device as an internal user')
    } finally {
      release()
    }
  }

  return {
    provision(deviceId, secret) {
      const inFlight = pending.get(deviceId)
      if (inFlight) return inFlight
      const done = provisionNow(deviceId, secret).finally(() => pending.delete(deviceId))
      pending.set(deviceId, done)
      return done
    },
    async remove(deviceId) {
      await management.deleteUser(deviceId)
    },
    async sweep(db) {
      const names = (await management.userNames()).filter((u) => UUID.test(u))
      let removed = 0
      for (let i = 0; i < names.length; i += SWEEP_BATCH) {
        const batch = names.slice(i, i + SWEEP_BATCH)
        const paired = new Set((await findDeviceCredentials(db, batch)).filter((d) => d.secretHash).map((d) => d.id))
        for (const name of batch) {
          if (paired.has(name)) continue
          await management.deleteUser(name)
          // Any connection it still has goes too, as at a revocation.
          await management.closeConnectionsOf(name, 'revoked')
          removed++
        }
      }
      return removed
    },
  }
}
