// RabbitMQ as the external broker for a benchmark: the machine's RabbitMQ configured for a service
// of ours in external mode (scripts/rabbitmq-setup.sh, through the test helper that also puts
// RabbitMQ back as it found it), that service with the rig's devices, and a fleet on RabbitMQ's
// MQTT listener. Every queue the run leaves (the devices' persistent sessions, the service's
// session and presence queue) is deleted at the end.
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { FLEET_TOPIC, topicFor } from '../../src/mqtt/contract.js'
import { RABBIT, rabbitExternalEnv, rabbitmqMissing, setUpRabbitMQ } from '../../test/helpers/rabbitmq.js'
import type { Context } from './context.js'
import { startFleet, type ConnectResult, type Fleet } from './fleet.js'
import { startOurs, writeCreds, type Ours } from './ours.js'
import { freePort } from './ports.js'
import { bounded } from './raw-mqtt.js'
import { OURS_BENCH_ENV, sharedRig, waitForEvents } from './shared.js'
import { Unavailable } from './unavailable.js'

const run = promisify(execFile)
const VHOST = encodeURIComponent('/')

export type RabbitRig = {
  /** Our service in external mode: the control plane (auth hook, presence, outbox, publisher). */
  ours: Ours
  fleet: Fleet
  /** RabbitMQ's Erlang VM (beam.smp): every queue, the MQTT plugin and the management statistics. */
  brokerPid: number
  version: string
  connect: ConnectResult & { eventsMs: number }
}

/** Through the management API: one request per queue, where rabbitmqctl would start a VM per call. */
async function deleteQueue(name: string): Promise<void> {
  const u = new URL(RABBIT.managementUrl)
  const auth = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')
  await fetch(`${u.origin}/api/queues/${VHOST}/${encodeURIComponent(name)}`, {
    method: 'DELETE',
    headers: { authorization: `Basic ${auth}` },
  })
}

export function sharedRabbit(ctx: Context): Promise<RabbitRig> {
  const teardowns: Array<() => unknown> = []
  const undo = async () => {
    for (const fn of teardowns.splice(0).reverse()) await fn()
  }
  return ctx.shared(
    'rabbit',
    () =>
      create(ctx, teardowns).catch(async (err) => {
        // Nothing will dispose of a resource that failed to start: put RabbitMQ back now.
        await undo()
        throw err
      }),
    async (r) => {
      await r.fleet.disconnect(true).catch(() => {})
      await r.fleet.stop()
      await r.ours.stop({ graceful: true })
      // Queues first (through the management API), then RabbitMQ's settings as they were.
      await undo()
    },
  )
}

async function create(ctx: Context, teardowns: Array<() => unknown>): Promise<RabbitRig> {
  const missing = await rabbitmqMissing()
  if (missing) throw new Unavailable(`RabbitMQ is needed for this scenario: ${missing}`)
  const rig = await sharedRig(ctx)
  // Each device is a socket and a queue on RabbitMQ. Out of file descriptors, RabbitMQ refuses
  // connections and then loses its own database (Mnesia) until restarted: seen here at the
  // default limit of 1,024 with 1,000 devices.
  const fds = Number((await run('rabbitmqctl', ['-q', 'eval', 'file_handle_cache:ulimit().'])).stdout.trim())
  const needed = rig.devices * 2 + 1000
  if (!(fds >= needed))
    throw new Unavailable(
      `RabbitMQ may open ${fds} files, ${rig.devices} devices need about ${needed}: start it with a higher limit (docs/rabbitmq.md, "File descriptors")`,
    )
  const port = await freePort()
  const secret = `bench-${randomBytes(16).toString('hex')}`
  await setUpRabbitMQ({ teardown: (fn) => teardowns.push(fn) }, `http://127.0.0.1:${port}`, secret)
  const presenceQueue = `dps.presence.bench-${randomBytes(4).toString('hex')}`
  const brokerId = `bench-${randomBytes(4).toString('hex')}`
  // The service's own persistent session is a queue named after its broker id.
  teardowns.push(
    () => deleteQueue(presenceQueue),
    () => deleteQueue(`mqtt-subscription-dps-service-${brokerId}qos1`),
  )
  ctx.log('rabbit: starting our service in external mode on RabbitMQ')
  const ours = await startOurs({
    port,
    dataDir: mkdtempSync(join(ctx.workDir, 'ours-rabbit-')),
    env: {
      ...OURS_BENCH_ENV,
      ...rabbitExternalEnv(secret, presenceQueue),
      MQTT_BROKER_ID: brokerId,
    },
  })
  const dir = mkdtempSync(join(ctx.workDir, 'rabbit-'))
  await ours.call('seed', { file: writeCreds(dir, 'creds', rig.creds) }, 300_000)
  const fleet = await startFleet()
  const since = Date.now() - 1000
  const topics = [topicFor('{id}', 'cmd'), FLEET_TOPIC]
  const mqttPort = Number(new URL(RABBIT.mqttUrl).port)
  const co = await fleet.connect({ port: mqttPort, creds: rig.creds, clean: false, subscribe: topics, concurrency: 100 })
  const stored = await waitForEvents(ours, 'device.connected', since, rig.devices, 120_000)
  if (co.failed || stored < rig.devices)
    throw new Error(`rabbit: connect failures ${JSON.stringify(co.codes)} (${stored} presence events of ${rig.devices})`)
  const eventsMs = Date.now() - co.start
  ctx.log(
    `rabbit: ${rig.devices} devices connected and subscribed on RabbitMQ in ${Math.round(co.end - co.start)} ms, presence stored after ${eventsMs} ms`,
  )
  const pid = (await run('rabbitmqctl', ['-q', 'eval', 'list_to_integer(os:getpid()).'])).stdout.trim()
  const version = (await run('rabbitmqctl', ['-q', 'eval', 'rabbit_misc:version().'])).stdout.trim().replaceAll('"', '')
  // Deleted at the end: the devices' persistent sessions (queues of their own on RabbitMQ); their
  // RabbitMQ users go with the helper's restore.
  teardowns.push(() => bounded(rig.creds, 20, (c) => deleteQueue(`mqtt-subscription-${c.id}qos1`)))
  return { ours, fleet, brokerPid: Number(pid), version, connect: { ...co, eventsMs } }
}
