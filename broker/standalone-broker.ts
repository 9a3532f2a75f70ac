// The broker without the service (broker/standalone.ts is its command line): anonymous or named
// clients, and topic access in Mosquitto's acl_file format when an ACL is given.
import { randomUUID } from 'node:crypto'
import type { Acl } from './acl.js'
import { connackError, createMqttServer, defaultLimits, DROP_TOPIC, type MqttServer } from './server.js'

export type StandaloneOptions = {
  /** Accept clients without credentials; alone (no users), accept every client. */
  allowAnonymous: boolean
  /** Names and passwords accepted. */
  users: ReadonlyMap<string, string>
  acl?: Acl
  maxPacketSize?: number
}

export async function createStandaloneBroker(opts: StandaloneOptions): Promise<MqttServer> {
  const { acl, users } = opts
  const usernames = new WeakMap<object, string>()
  const who = (client: { id: string }) => ({ clientId: client.id, username: usernames.get(client) })
  return createMqttServer({
    id: `standalone-${randomUUID().slice(0, 8)}`,
    // For protocol work and benchmarks: no rate, connection or subscription caps.
    limits: {
      ...defaultLimits,
      maxPacketSize: opts.maxPacketSize ?? defaultLimits.maxPacketSize,
      connectRate: 0,
      keepaliveLimit: 0,
      inboundRate: 0,
      maxSubscriptions: 0,
    },
    onError: (err) => process.stderr.write(`broker: ${err.message}\n`),
    hooks: {
      authorizeSubscribe(client, sub, done) {
        if (!acl || !client || acl.allows(who(client), 'read', sub.topic)) return done(null, sub)
        done(null, null)
      },
      // A granted filter may also match topics the client may not read (`#` beside a deny): each
      // message is checked as it is delivered, as Mosquitto does.
      authorizeForward(client, packet) {
        return !acl || acl.allows(who(client), 'read', packet.topic) ? packet : null
      },
      authorizePublish(client, packet, done) {
        // A will or a client's own publish alike; MQTT 3.1.1 has no negative PUBACK.
        if (acl && client && !acl.allows(who(client), 'write', packet.topic)) {
          packet.topic = DROP_TOPIC
          packet.retain = false
        }
        done(null)
      },
      authenticate(client, username, password, done) {
        // allowAnonymous alone lets every client in, whatever it sends (test suites often send
        // credentials); with users, named clients must match, as in Mosquitto.
        const accept = (name: string | undefined) => {
          if (name !== undefined) usernames.set(client, name)
          done(null, true)
        }
        if (opts.allowAnonymous && (!username || users.size === 0)) return accept(users.size === 0 ? username : undefined)
        const expected = username ? users.get(username) : undefined
        if (expected !== undefined && password?.toString('utf8') === expected) return accept(username)
        done(connackError(4, 'bad user name or password'), false)
      },
    },
  })
}
