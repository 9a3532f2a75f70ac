// The service restarts under a connected simulator: the simulator notices, retries with backoff,
// reconnects with the same credentials (no new pairing) once the service is back on the same
// ports, and gets what was sent while it was still reconnecting. A relay between the simulator
// and the broker stays down until the command is sent, so "still reconnecting" is a fact, not
// a race.
import t from 'tap'
import { SimDevice, resolveProfile, type PairingInfo } from '../../device-sim/index.js'
import { freePort, startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually } from '../helpers/mqtt.js'
import { call, nextEvent, startRelay, tempDir, type DeviceDetail, type EventRecord } from './helpers.js'
import { join } from 'node:path'

// With Redis the broker's sessions (subscriptions and queued QoS 1 messages) live in Redis and
// survive the restart; the embedded default keeps them in memory, so a restart ends them.
const durableSessions = Boolean(process.env.REDIS_URL)

t.test('the simulator survives a service restart and gets what was sent meanwhile', async (t) => {
  const httpPort = await freePort()
  const brokerPort = await freePort()
  const relay = await startRelay(t, brokerPort)
  const env = {
    DEVICE_POLL_INTERVAL: '0',
    PORT: String(httpPort),
    MQTT_PORT: String(brokerPort),
    // Devices are told to connect through the relay, as they would through a load balancer.
    MQTT_PUBLIC_URL: `mqtt://127.0.0.1:${relay.port}`,
  }
  const first = await startApp(t, { env })
  const { token } = await signUp(makeClient(first.url).client, uniqueEmail('sim-restart'))
  const dir = await tempDir(t)
  const sim = new SimDevice({
    server: first.url,
    name: 'porch',
    display: resolveProfile('spectra6'),
    statePath: join(dir, 'porch.json'),
    reconnectMinMs: 100,
    reconnectMaxMs: 400,
  })
  t.teardown(() => sim.stop())
  const shown = nextEvent(sim, 'pairing')
  const online = sim.start()
  const pairing = await shown
  t.equal((await call(first, 'POST', '/api/device/validate', token, { pinCode: pairing.pinCode, name: 'Porch' })).status, 200)
  await online
  const deviceId = pairing.deviceId
  const pairings: PairingInfo[] = []
  sim.on('pairing', (p) => pairings.push(p))
  const commands: string[] = []
  sim.on('command', (c) => commands.push(c.commandId))

  // The service goes away; the simulator keeps retrying.
  const dropped = nextEvent(sim, 'disconnected')
  const retrying = nextEvent(sim, 'reconnecting')
  relay.down()
  await first.close()
  t.ok((await dropped).reason, 'the simulator saw its connection end')
  t.ok((await retrying).delayMs > 0, 'and schedules reconnects with a delay')

  const second = await startApp(t, {
    env,
    reuse: { dataDir: first.dataDir, databaseUrl: first.config.databaseUrl, redisPrefix: first.config.redisPrefix },
  })
  t.equal(second.url, first.url, 'the service is back at the same address')
  t.notOk(sim.connected, 'the simulator is still reconnecting')

  // Sent while the simulator cannot reach the broker yet.
  const meanwhile = await call<{ commandId: string }>(second, 'POST', `/api/device/${deviceId}/command`, token, { command: 'identify' })
  t.equal(meanwhile.status, 202)

  const back = nextEvent(sim, 'connected')
  relay.up()
  const reconnected = await back
  t.equal(reconnected.deviceId, deviceId, 'it reconnects with the same credentials')
  t.same(pairings, [], 'without pairing again')

  // With Redis the broker kept the session and its queue; the embedded broker keeps sessions in
  // memory, so the device starts a new one and the service sends what it never acknowledged.
  t.equal(
    reconnected.sessionPresent,
    durableSessions,
    durableSessions ? 'its persistent session survived the restart (Redis)' : 'a new session after the restart',
  )
  await eventually(async () => commands.includes(meanwhile.body.commandId))
  t.pass('the command sent while it was reconnecting arrives')
  await eventually(async () => {
    const { body } = await call<{ events: EventRecord[] }>(second, 'GET', `/api/device/${deviceId}/events?limit=50`, token)
    return body.events.some((e) => e.type === 'device.ack' && e.data.commandId === meanwhile.body.commandId && e.data.matched === true)
  })
  t.pass('and is acknowledged to the restarted service')
  t.same(commands, [meanwhile.body.commandId], 'it was handled exactly once')

  const seen = await eventually(async () => {
    const d = await call<DeviceDetail>(second, 'GET', `/api/device/${deviceId}`, token)
    return d.body.isActive && d.body.isSynced ? d.body : null
  })
  t.ok(seen, 'the restarted service sees the device online and in sync from its status report')
  t.equal(sim.stats.errors, 0, 'nothing went wrong on the device')
})
