// External-broker mode on RabbitMQ: what the plain MQTT link (external.ts) cannot do there.
// Presence from RabbitMQ's event exchange (RABBITMQ_AMQP_URL) and kicks through its management
// API (RABBITMQ_MANAGEMENT_URL), through which devices also become RabbitMQ internal users
// (RABBITMQ_DEVICE_USERS); each is optional, and without them the link is the plain one.
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import type { PresenceChange } from './contract.js'
import type { ExternalLink } from './external.js'
import { directLookup } from './credentials.js'
import { rabbitDeviceUsers } from './rabbitmq-device-users.js'
import { rabbitManagement } from './rabbitmq-management.js'
import { startRabbitPresence, type RabbitPresence } from './rabbitmq-presence.js'

const SWEEP_MS = 10 * 60_000

export async function withRabbitMQ(
  link: ExternalLink,
  deps: {
    config: Config['mqtt']['rabbitmq']
    db: Database
    log: { warn: (o: object | string, m?: string) => void }
    onPresence?: (change: PresenceChange) => void
  },
): Promise<ExternalLink> {
  const { config, log } = deps
  const management = config.managementUrl ? rabbitManagement(config.managementUrl) : undefined
  const users =
    management && config.deviceUsers
      ? rabbitDeviceUsers({ management, vhost: config.vhost, lookup: directLookup(deps.db), log })
      : undefined
  const presence: RabbitPresence | undefined = config.amqpUrl
    ? await startRabbitPresence({
        url: config.amqpUrl,
        queue: config.presenceQueue,
        vhost: config.vhost,
        db: deps.db,
        log,
        onPresence: deps.onPresence,
        // It took over another device's connection: its user goes (our HTTP routes, which then
        // decide its logins, refuse a client id not its own) and so does its connection.
        onForeignClientId: async (deviceId, clientId) => {
          log.warn({ deviceId, clientId }, 'RabbitMQ: a device logged in with a client id not its own; its user is deleted')
          await users?.remove(deviceId)
          await management?.closeConnectionsOf(deviceId, 'client id not its own')
        },
        publish: async (topic, body, retain) => {
          await link.client.publishAsync(topic, JSON.stringify(body), { qos: 1, retain })
        },
      })
    : undefined
  // Devices gone without the service's revocation (an account deleted with its devices): their
  // users are looked for at start and every SWEEP_MS.
  const sweep = () =>
    users
      ?.sweep(deps.db)
      .then((n) => n && log.warn(`RabbitMQ: deleted ${n} internal users of devices no longer paired`))
      .catch((err: unknown) => log.warn({ err }, 'RabbitMQ: could not sweep device users'))
  void sweep()
  const sweeper = users ? setInterval(sweep, SWEEP_MS).unref() : undefined
  return {
    ...link,
    credentialsIssued: async (deviceId, secret) => users?.provision(deviceId, secret),
    // Their account was deleted: their users go now, not at the next sweep, and so do their connections.
    async devicesDeleted(deviceIds) {
      for (const id of deviceIds) {
        await users?.remove(id).catch((err: unknown) => log.warn({ err, deviceId: id }, 'RabbitMQ: could not delete the device’s user'))
        await management
          ?.closeConnectionsOf(id, 'account deleted')
          .catch((err: unknown) => log.warn({ err, deviceId: id }, 'RabbitMQ: could not close the device’s connections'))
      }
    },
    async credentialsRevoked(deviceId) {
      // Gone before the connection is closed: the device cannot log in again on RabbitMQ's own
      // say. If this fails the user stays, with a secret we no longer accept: said loudly.
      await users?.remove(deviceId).catch((err: unknown) => log.warn({ err, deviceId }, 'RabbitMQ: could not delete the device’s user'))
    },
    async kick(deviceId, reason = 'kicked') {
      if (!management) return link.kick(deviceId, reason)
      // Marked first: the close may be announced before the management API answers.
      const wait = presence?.expectKick(deviceId)
      try {
        const closed = await management.closeConnectionsOf(deviceId, reason)
        // Like the embedded broker, the disconnect's event is stored before the caller goes on (a delete must not race it).
        if (closed) await wait?.recorded
        else wait?.cancel()
        return closed
      } catch (err) {
        wait?.cancel()
        // The secret is revoked already: the device stays out from its next connect.
        log.warn({ err, deviceId }, 'RabbitMQ: could not close the device’s connection')
        return false
      }
    },
    async close() {
      clearInterval(sweeper)
      await presence?.close()
      await link.close()
    },
  }
}
