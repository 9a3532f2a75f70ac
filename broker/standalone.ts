// The same broker without the service, for protocol work: any MQTT 3.1.1 client or test suite
// can be pointed at it.  npm run broker -- --port 1884 --allow-anonymous
import { parseArgs } from 'node:util'
import { randomUUID } from 'node:crypto'
import { connackError, createMqttServer, defaultLimits } from './server.js'

const help = `Usage: npm run broker -- [options]

  --port N             TCP port (default 1884; 0 picks a free one)
  --host ADDR          listen address (default 127.0.0.1)
  --allow-anonymous    accept clients without credentials (alone: accept every client)
  --user NAME:PASS     accept this username and password (repeatable)
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
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    console.log(help)
    return
  }
  const users = new Map(values.user.map((u) => [u.slice(0, u.indexOf(':')), u.slice(u.indexOf(':') + 1)]))
  if (!values['allow-anonymous'] && users.size === 0) {
    console.error('Give --allow-anonymous or at least one --user NAME:PASS\n\n' + help)
    process.exit(1)
  }
  const port = Number(values.port)
  const maxPacketSize = values['max-packet'] ? Number(values['max-packet']) : defaultLimits.maxPacketSize
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !Number.isInteger(maxPacketSize) || maxPacketSize < 16) {
    console.error('--port and --max-packet must be integers\n\n' + help)
    process.exit(1)
  }
  const server = await createMqttServer({
    id: `standalone-${randomUUID().slice(0, 8)}`,
    limits: { ...defaultLimits, maxPacketSize, connectRate: 0, keepaliveLimit: 0 },
    hooks: {
      authenticate(_client, username, password, done) {
        // --allow-anonymous alone lets every client in, whatever it sends (test suites often send
        // credentials); with --user lists, named clients must match, as in Mosquitto.
        if (values['allow-anonymous'] && (!username || users.size === 0)) return done(null, true)
        const expected = username ? users.get(username) : undefined
        if (expected !== undefined && password?.toString('utf8') === expected) return done(null, true)
        done(connackError(4, 'bad user name or password'), false)
      },
    },
  })
  const bound = await server.listenTcp(port, values.host).catch((err: NodeJS.ErrnoException) => {
    console.error(err.code === 'EADDRINUSE' ? `port ${port} is in use: choose another with --port` : String(err))
    process.exit(1)
  })
  console.log(`MQTT 3.1.1 broker listening on mqtt://${values.host}:${bound}${values['allow-anonymous'] ? ' (anonymous allowed)' : ''}`)
  const stop = async () => {
    await server.close()
    process.exit(0)
  }
  process.on('SIGINT', () => void stop())
  process.on('SIGTERM', () => void stop())
}

void main()
