// Two RabbitMQ nodes (docs/rabbitmq.md, "Two nodes"): the machine's node and a second one the
// setup script starts and joins to it. The service publishes, reads presence and manages users
// through node 1; devices connect to either. Skipped when RabbitMQ is not here, except in CI.
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import mqtt, { type IConnackPacket, type MqttClient } from 'mqtt'
import t from 'tap'
import { freePort, startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { connect, eventually, nextMessage } from '../helpers/mqtt.js'
import {
  deleteQueues,
  node2Name,
  RABBIT,
  RABBIT2,
  rabbitmqctl2,
  rabbitmqMissing,
  setUpRabbitMQ,
  rabbitServiceEnv,
} from '../helpers/rabbitmq.js'

const run = promisify(execFile)
const missing = await rabbitmqMissing()
if (missing && process.env.CI) t.fail(`CI must run the RabbitMQ tests: ${missing}`)
const SECRET = `hook-${randomBytes(16).toString('hex')}`

t.test('two RabbitMQ nodes', { skip: missing && !process.env.CI ? missing : false }, async (t) => {
  const port = await freePort()
  const setupStart = performance.now()
  const { node2: started } = await setUpRabbitMQ(t, `http://127.0.0.1:${port}`, SECRET, { node2: true })
  t.comment(`node 1 set up and node 2 started and joined in ${((performance.now() - setupStart) / 1000).toFixed(1)} s`)
  t.comment(started?.stdout.trim() ?? '')
  if (started?.stderr.trim()) t.comment(started.stderr.trim())
  const node1 = (await run('rabbitmqctl', ['-q', 'eval', 'node().'])).stdout.trim().replace(/'/g, '')
  const node2 = await node2Name()
  const env = rabbitServiceEnv(port, SECRET)
  // Persistent sessions leave their queues behind: part of leaving RabbitMQ as found. Registered
  // before the service starts: tap runs teardowns last-registered first, and a queue deleted
  // while the service runs is declared again by its reconnect.
  const queues = [env.RABBITMQ_PRESENCE_QUEUE]
  t.teardown(() => deleteQueues(queues))
  const svc = await startApp(t, { env })
  queues.push(`mqtt-subscription-dps-service-${svc.config.mqtt.brokerId}qos1`)
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('rabbit2'))
  const api = async <T>(method: string, path: string, body?: unknown) =>
    (await jsonCall(svc.url, path, { method, token, body })) as { status: number; body: T }
  type Presence = { type: string; data: Record<string, unknown> }
  const presenceEvents = async (deviceId: string) =>
    (await api<{ events: Presence[] }>('GET', `/api/device/${deviceId}/events?limit=50`)).body.events.filter(
      (e) => e.type === 'device.connected' || e.type === 'device.disconnected',
    )
  /** Waits for a presence event of `type` that `match` accepts; newest first. */
  const presence = (deviceId: string, type: string, match: (e: Presence) => boolean = () => true, timeoutMs?: number) =>
    eventually(async () => (await presenceEvents(deviceId)).find((e) => e.type === type && match(e)) ?? null, timeoutMs)
  const onNode2 = (dev: PairedDevice) =>
    connect(RABBIT2.mqttUrl, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })

  t.test('node 2 runs with an open-files limit that fits a fleet', async (t) => {
    const hard = Number((await run('bash', ['-c', 'ulimit -Hn'])).stdout.trim())
    const limit = Number((await rabbitmqctl2(['-q', 'eval', 'file_handle_cache:ulimit().'])).trim())
    t.comment(`node 2 may open ${limit} files (hard limit here ${hard}; the distribution's su start gives 1,024)`)
    t.equal(limit, Math.min(65_536, hard), 'raised to 65,536 or the hard limit, whichever is lower')
    // rabbitmqctl status shows the limit less the few descriptors RabbitMQ keeps for itself.
    const shown = Number(/File Descriptors[\s\S]*?limit: (\d+)/.exec(await rabbitmqctl2(['status']))?.[1])
    t.ok(shown > limit - 200 && shown <= limit, `rabbitmqctl status shows it (${shown})`)
  })

  t.test('a device on node 2 gets what the service publishes through node 1; presence comes from both nodes', async (t) => {
    const dev = await pairDevice(svc, token)
    const near = await pairDevice(svc, token)
    const c = await onNode2(dev)
    const c1 = await connect(RABBIT.mqttUrl, { clientId: near.deviceId, username: near.deviceId, password: near.password })
    const connected = await presence(dev.deviceId, 'device.connected')
    t.equal(connected.data.node, node2, 'device.connected from node 2’s event exchange')
    t.equal((await presence(near.deviceId, 'device.connected')).data.node, node1, 'and from node 1’s')
    await c.subscribeAsync(dev.topics.prompt!, { qos: 1 })
    const arrives = nextMessage<{ text: string }>(c, dev.topics.prompt!)
    t.equal((await api('POST', '/api/prompts', { text: 'across the cluster', deviceId: dev.deviceId })).status, 201)
    t.equal((await arrives).payload.text, 'across the cluster', 'the prompt reaches it on node 2')
    await c.endAsync()
    await c1.endAsync()
    t.equal((await presence(dev.deviceId, 'device.disconnected')).data.reason, 'client_disconnect', 'its disconnect on node 2 is recorded')
    await presence(near.deviceId, 'device.disconnected')
    t.equal((await api<{ isActive: boolean }>('GET', `/api/device/${dev.deviceId}`)).body.isActive, false, 'and it is shown offline')
  })

  t.test('revoking a device on node 2 closes its connection there within a second and keeps it out', async (t) => {
    const dev = await pairDevice(svc, token)
    const c = await onNode2(dev)
    await presence(dev.deviceId, 'device.connected')
    const closed = new Promise<number>((resolve) => c.once('close', () => resolve(performance.now())))
    const start = performance.now()
    t.equal((await api('POST', '/api/device/disconnect', { deviceId: dev.deviceId })).status, 200)
    const ms = (await closed) - start
    t.comment(`revocation on node 2: connection closed ${ms.toFixed(1)} ms after the API call`)
    t.ok(ms < 1000, 'within a second')
    t.equal((await presence(dev.deviceId, 'device.disconnected')).data.reason, 'kicked', 'recorded as kicked')
    const again = await onNode2(dev).then(
      (back) => {
        back.end(true)
        return false
      },
      () => true,
    )
    t.equal(again, true, 'it cannot come back on node 2')
  })

  t.test('node 2 stops with devices on it: they reconnect to node 1 and get everything the service accepted', async (t) => {
    type Device = {
      dev: PairedDevice
      client: MqttClient
      got: Map<number, string>
      sessions: Array<{ port: number; sessionPresent: boolean }>
    }
    const devices: Device[] = []
    for (let i = 0; i < 3; i++) {
      const dev = await pairDevice(svc, token)
      queues.push(`mqtt-subscription-${dev.deviceId}qos1`)
      // Node 2 first, node 1 next: what a load balancer or DNS in front of both gives a device.
      const client = mqtt.connect({
        servers: [
          { host: '127.0.0.1', port: RABBIT2.mqttPort },
          { host: '127.0.0.1', port: 1884 },
        ],
        clientId: dev.deviceId,
        username: dev.deviceId,
        password: dev.password,
        clean: false,
        protocolVersion: 4,
        reconnectPeriod: 200,
        connectTimeout: 10_000,
      })
      t.teardown(() => client.end(true))
      const d: Device = { dev, client, got: new Map(), sessions: [] }
      // As the firmware does: what it received is acknowledged with its seq, and each connect's
      // first status says whether the broker still had its session.
      client.on('message', (topic, payload) => {
        if (topic !== dev.topics.prompt) return
        const m = JSON.parse(payload.toString()) as { seq: number; text: string }
        d.got.set(m.seq, m.text)
        client.publish(dev.topics.ack!, JSON.stringify({ seq: m.seq }), { qos: 1 })
      })
      client.on('connect', (connack: IConnackPacket) => {
        d.sessions.push({ port: Number(client.options.port), sessionPresent: connack.sessionPresent })
        client.publish(dev.topics.status!, JSON.stringify({ battery: 80, configVersion: 1, sessionPresent: connack.sessionPresent }), {
          qos: 1,
        })
      })
      await eventually(async () => (d.sessions.length ? true : null))
      await client.subscribeAsync(dev.topics.prompt!, { qos: 1 })
      devices.push(d)
    }
    t.same(
      devices.map((d) => d.sessions[0]?.port),
      [RABBIT2.mqttPort, RABBIT2.mqttPort, RABBIT2.mqttPort],
      'every device connected to node 2',
    )
    const sent = new Map<string, string[]>()
    const send = async (text: string) => {
      for (const { dev } of devices) {
        const res = await api('POST', '/api/prompts', { text, deviceId: dev.deviceId })
        t.equal(res.status, 201, `the service accepted "${text}" for a device`)
        sent.set(dev.deviceId, [...(sent.get(dev.deviceId) ?? []), text])
      }
    }
    await send('before the stop')
    await eventually(async () => (devices.every((d) => d.got.size === 1) ? true : null))

    const stopping = rabbitmqctl2(['-q', 'stop'])
    // Sent while node 2 goes down, and after it is down while the devices find node 1.
    await send('while node 2 stops')
    await stopping
    t.pass('node 2 stopped')
    await send('after node 2 stopped')

    await eventually(async () => (devices.every((d) => d.sessions.at(-1)?.port === 1884) ? true : null), 30_000)
    t.pass('every device reconnected, to node 1')
    for (const d of devices) {
      await presence(d.dev.deviceId, 'device.connected', (e) => e.data.node === node1, 15_000)
    }
    t.pass('their connects on node 1 are recorded')
    const pending = async (deviceId: string) =>
      (await api<{ messages: Array<{ seq: number; status: string }> }>('GET', `/api/device/${deviceId}/downlink`)).body.messages.filter(
        (m) => m.status === 'pending',
      )
    await eventually(async () => {
      for (const d of devices) if ((await pending(d.dev.deviceId)).length) return null
      return true
    }, 30_000).catch(() => undefined)
    for (const d of devices) {
      const texts = [...new Set(d.got.values())]
      t.same(texts.sort(), [...(sent.get(d.dev.deviceId) ?? [])].sort(), 'a device got every prompt the service accepted')
      t.same(await pending(d.dev.deviceId), [], 'and acknowledged each: nothing pending')
      t.comment(`sessions: ${d.sessions.map((s) => `${s.port}${s.sessionPresent ? ' (session present)' : ''}`).join(', ')}`)
    }
  })
})
