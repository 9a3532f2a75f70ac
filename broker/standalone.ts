// The same broker without the service, for protocol work: any MQTT 3.1.1 client or test suite
// can be pointed at it.  npm run broker -- --port 1884 --allow-anonymous
import { parseArgs } from 'node:util'
import { randomUUID } from 'node:crypto'
import { connackError, createMqttServer, defaultLimits, DROP_TOPIC } from './server.js'
import { AclError, loadAcl, type Acl } from './acl.js'

const help = `Usage: npm run broker -- [options]

  --port N             TCP port (default 1884; 0 picks a free one)
  --host ADDR          listen address (default 127.0.0.1)
  --allow-anonymous    accept clients without credentials (alone: accept every client)
  --user NAME:PASS     accept this username and password (repeatable)
  --acl-file PATH      topic access in Mosquitto's acl_file format (topic, user, pattern
                       with %c/%u); refused subscriptions get 0x80, refused publishes are
                       acknowledged and dropped, as Mosquitto does. Without it: no checks.
  --max-packet BYTES   largest packet accepted (default ${defaultLimits.maxPacketSize})
  -h, --help           this text

Exit codes: 0 stopped by a signal, 1 could not start (port in use, bad options).`

async function main() {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '1884' },
      host: { type: 'string', default: '127.0.0.1' },
      'allow-anonymous': { type: 'boolean', default: false },
      user: { type: 'string', multiple: true, default: [] },
      'max-packet': { type: 'string' },
      'acl-file': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    console.log(help)
    return
  }
  const users = new Map(values.user.map((u) => [u.slice(0, u.indexOf(':')), u.slice(u.indexOf(':') + 1)]))
  if (!values['allow-anonymous'] && users.size === 0) {
    console.error(`Give --allow-anonymous or at least one --user NAME:PASS\n\n${help}`)
    process.exit(1)
  }
  const port = Number(values.port)
  const maxPacketSize = values['max-packet'] ? Number(values['max-packet']) : defaultLimits.maxPacketSize
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !Number.isInteger(maxPacketSize) || maxPacketSize < 16) {
    console.error(`--port and --max-packet must be integers\n\n${help}`)
    process.exit(1)
  }
  let acl: Acl | undefined
  if (values['acl-file']) {
    acl = await loadAcl(values['acl-file']).catch((err: unknown) => {
      console.error(err instanceof AclError ? err.message : String(err))
      return process.exit(1)
    })
  }
  const usernames = new WeakMap<object, string>()
  const who = (client: { id: string }) => ({ clientId: client.id, username: usernames.get(client) })
  const server = await createMqttServer({
    id: `standalone-${randomUUID().slice(0, 8)}`,
    // For protocol work and benchmarks: no rate, connection or subscription caps.
    limits: { ...defaultLimits, maxPacketSize, connectRate: 0, keepaliveLimit: 0, inboundRate: 0, maxSubscriptions: 0 },
    hooks: {
      authorizeSubscribe(client, sub, done) {
        if (!acl || !client || acl.allows(who(client), 'read', sub.topic)) return done(null, sub)
        done(null, null)
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
        // --allow-anonymous alone lets every client in, whatever it sends (test suites often send
        // credentials); with --user lists, named clients must match, as in Mosquitto.
        const accept = (name: string | undefined) => {
          if (name !== undefined) usernames.set(client, name)
          done(null, true)
        }
        if (values['allow-anonymous'] && (!username || users.size === 0)) return accept(users.size === 0 ? username : undefined)
        const expected = username ? users.get(username) : undefined
        if (expected !== undefined && password?.toString('utf8') === expected) return accept(username)
        done(connackError(4, 'bad user name or password'), false)
      },
    },
  })
  const bound = await server.listenTcp(port, values.host).catch((err: NodeJS.ErrnoException) => {
    console.error(err.code === 'EADDRINUSE' ? `port ${port} is in use: choose another with --port` : String(err))
    process.exit(1)
  })
  console.log(
    `MQTT 3.1.1 broker listening on mqtt://${values.host}:${bound}${values['allow-anonymous'] ? ' (anonymous allowed)' : ''}${acl ? ` with ${acl.rules} ACL rules` : ''}`,
  )
  const stop = async () => {
    await server.close()
    process.exit(0)
  }
  process.on('SIGINT', () => void stop())
  process.on('SIGTERM', () => void stop())
}

void main()
