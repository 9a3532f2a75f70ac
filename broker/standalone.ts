// The same broker without the service, for protocol work: any MQTT 3.1.1 client or test suite
// can be pointed at it.  npm run broker -- --port 1884 --allow-anonymous
import { parseArgs } from 'node:util'
import { defaultLimits } from './server.js'
import { AclError, loadAcl, type Acl } from './acl.js'
import { createStandaloneBroker } from './standalone-broker.js'

const help = `Usage: npm run broker -- [options]

  --port N             TCP port (default 1884; 0 picks a free one)
  --host ADDR          listen address (default 127.0.0.1)
  --allow-anonymous    accept clients without credentials (alone: accept every client)
  --user NAME:PASS     accept this username and password (repeatable)
  --acl-file PATH      topic access in Mosquitto's acl_file format (topic, user, pattern
                       with %c/%u); as Mosquitto does, a subscription all of whose topics
                       are denied gets 0x80, a wildcard that also reaches denied topics is
                       granted and each message checked on delivery, and refused publishes
                       are acknowledged and dropped. Without it: no checks.
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
  const server = await createStandaloneBroker({ allowAnonymous: values['allow-anonymous'], users, acl, maxPacketSize })
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
