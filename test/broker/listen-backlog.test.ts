// A fleet reconnecting at once (after an outage or a deploy) arrives faster than the broker
// accepts: the kernel's accept queue holds the rest, and what does not fit is dropped and retried
// by the device seconds later. The listener's queue is the kernel's own figure: `ss -ltn` shows a
// listening socket's backlog as its Send-Q.
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import t from 'tap'
import { createMqttServer, defaultLimits, LISTEN_BACKLOG } from '../../broker/server.js'

const run = promisify(execFile)
const ss = await run('ss', ['-V']).then(
  () => undefined,
  () => 'ss (iproute2) is not installed: the listener queue is read from it',
)
if (ss && process.env.CI) t.fail(`CI must run this test: ${ss}`)

t.test(
  'the MQTT listener queues as many connections as the kernel allows, up to 4,096',
  { skip: ss && !process.env.CI ? ss : false },
  async (t) => {
    const server = await createMqttServer({ id: 'backlog-test', limits: defaultLimits, hooks: {} })
    t.teardown(() => server.close())
    const port = await server.listenTcp(0, '127.0.0.1')
    const { stdout } = await run('ss', ['-ltnH', `sport = :${port}`])
    const [, , sendQ] = stdout.trim().split(/\s+/)
    const somaxconn = Number((await readFile('/proc/sys/net/core/somaxconn', 'utf8')).trim())
    t.equal(Number(sendQ), Math.min(LISTEN_BACKLOG, somaxconn), `backlog ${sendQ} (somaxconn ${somaxconn})`)
    t.ok(Number(sendQ) > 511, "more than Node's default of 511")
  },
)
