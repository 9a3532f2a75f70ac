// How the simulator behaves as a device between the big moments: it reboots on command and comes
// back, reports its status on a schedule, its battery drains with time, it refuses an image whose
// bytes do not match their digest (and says so in its ack), acknowledges config messages, and
// its reconnect delays grow exponentially with jitter inside their bounds.
import t from 'tap'
import { join } from 'node:path'
import { connect as netConnect, createServer as createNetServer, type AddressInfo } from 'node:net'
import mqttPacket from 'mqtt-packet'
import { eq } from 'drizzle-orm'
import { SimDevice, resolveProfile } from '../../device-sim/index.js'
import { freePort, startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually, mqttUrl } from '../helpers/mqtt.js'
import { call, nextEvent, tempDir } from './helpers.js'
import { event } from '../../src/events/tables.js'
import { appFetch } from '../helpers/app-fetch.js'

const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('sim-behaviour'))
const dir = await tempDir(t)

async function device(name: string, extra: Partial<ConstructorParameters<typeof SimDevice>[0]> = {}) {
  const dev = new SimDevice({
    server: svc.url,
    mqttUrl: mqttUrl(svc),
    name,
    display: resolveProfile('bw-800x480'),
    statePath: join(dir, `${name}.json`),
    claimToken: token,
    ...extra,
  })
  t.teardown(() => dev.stop())
  await dev.start()
  return dev
}
const acks = async (deviceId: string) =>
  (await svc.app.database.db.select().from(event).where(eq(event.deviceId, deviceId)))
    .filter((e) => e.type === 'device.ack')
    .map((e) => e.data as Record<string, unknown>)

t.test('reboot: disconnects, comes back on the same session, and acknowledges', async (t) => {
  const dev = await device('rebooter', { rebootMs: 300 })
  const id = dev.deviceId!
  const rebooting = nextEvent(dev, 'rebooting')
  const back = nextEvent(dev, 'connected')
  const sent = await call<{ commandId: string }>(svc, 'POST', `/api/device/${id}/command`, token, { command: 'reboot' })
  t.equal(sent.status, 202)
  t.equal((await rebooting).ms, 300)
  const again = await back
  t.equal(again.deviceId, id)
  t.equal(again.sessionPresent, true, 'the persistent session was kept')
  await eventually(async () => (await acks(id)).some((a) => a.commandId === sent.body.commandId && a.ok === true))
  t.pass('the reboot was acknowledged')
})

t.test('status on a schedule, with the battery draining over time', async (t) => {
  const dev = await device('drainer', { statusIntervalMs: 400, drainPerHour: 3600, battery: 80 })
  const first = await nextEvent(dev, 'status', (s) => s.reason === 'schedule')
  const second = await nextEvent(dev, 'status', (s) => s.reason === 'schedule')
  t.ok(second.battery < first.battery, `the battery went down between reports (${first.battery}% → ${second.battery}%)`)
  t.ok(first.battery <= 80)
  const detail = await eventually(async () => {
    const d = await call<{ info: Record<string, unknown> }>(svc, 'GET', `/api/device/${dev.deviceId}`, token)
    return d.status === 200 ? d.body : null
  })
  t.ok(detail, 'the service has the reports')
})

t.test('an image whose bytes do not match its sha256 is refused and reported', async (t) => {
  const dev = await device('checker')
  const id = dev.deviceId!
  const failed = nextEvent(dev, 'image-failed')
  let shown = false
  dev.on('image', () => (shown = true))
  // A real image URL of this service, announced with a digest that is not its own.
  const demo = (await (await appFetch(`${svc.url}/api/demo?palette=bw`)).json()) as {
    result: { images: Array<{ url: string; format: string; bytes?: number }> }
  }
  const bmp = demo.result.images.find((i) => i.format === 'bmp1')!
  await svc.app.deviceLink.publish(id, 'image', {
    imageId: '11111111-2222-4333-8444-555555555555',
    url: bmp.url,
    format: 'bmp1',
    width: 800,
    height: 480,
    bytes: 48062,
    sha256: '0'.repeat(64),
    contentType: 'image/bmp',
  })
  const f = await failed
  t.match(f.error, /sha256 mismatch/)
  t.equal(shown, false, 'nothing was shown')
  await eventually(async () => (await acks(id)).some((a) => a.kind === 'image' && a.ok === false && /sha256/.test(String(a.error))))
  t.pass('the ack says it failed and why')
})

t.test('config messages are acknowledged', async (t) => {
  const dev = await device('configured')
  const id = dev.deviceId!
  const config = nextEvent(dev, 'config', (c) => c.message.name === 'Renamed')
  t.equal((await call(svc, 'PATCH', `/api/device/${id}`, token, { name: 'Renamed' })).status, 200)
  const c = await config
  t.equal(c.changed, true)
  await eventually(async () => (await acks(id)).some((a) => a.kind === 'config' && a.version === c.message.version && a.ok === true))
  t.pass(`config v${c.message.version} acknowledged`)
})

t.test('reconnect delays grow exponentially, with jitter, up to the cap', async (t) => {
  const dead = await freePort()
  const dev = new SimDevice({
    server: svc.url,
    mqttUrl: `mqtt://127.0.0.1:${dead}`,
    name: 'unlucky',
    display: resolveProfile('gray4'),
    statePath: join(dir, 'unlucky.json'),
    claimToken: token,
    reconnectMinMs: 40,
    reconnectMaxMs: 320,
  })
  t.teardown(() => dev.stop())
  const delays: Array<{ attempt: number; delayMs: number }> = []
  dev.on('reconnecting', (r) => delays.push(r))
  void dev.start().catch(() => {})
  await eventually(async () => delays.length >= 6, 15_000)
  await dev.stop()
  for (const { attempt, delayMs } of delays.slice(0, 6)) {
    const ceiling = Math.min(320, 40 * 2 ** (attempt - 1))
    t.ok(delayMs >= ceiling / 2 && delayMs <= ceiling, `attempt ${attempt}: ${delayMs} ms within [${ceiling / 2}, ${ceiling}]`)
  }
  t.equal(delays.at(-1)!.delayMs <= 320, true, 'never above the cap')
})

t.test('a SUBSCRIBE the broker never answers: the device gives up on that connection, reconnects and subscribes again', async (t) => {
  // A relay in front of the real broker that loses the device's first SUBSCRIBE, as a broker
  // that stalls would: no SUBACK ever comes back on that connection.
  const broker = new URL(mqttUrl(svc))
  let swallowed = 0
  const relay = createNetServer((inbound) => {
    const outbound = netConnect(Number(broker.port), broker.hostname)
    const parser = mqttPacket.parser({ protocolVersion: 4 })
    parser.on('packet', (packet) => {
      if (packet.cmd === 'subscribe' && swallowed === 0) {
        swallowed += 1
        return
      }
      outbound.write(mqttPacket.generate(packet))
    })
    inbound.on('data', (chunk) => parser.parse(chunk))
    outbound.pipe(inbound)
    const close = () => {
      inbound.destroy()
      outbound.destroy()
    }
    inbound.on('error', close).on('close', close)
    outbound.on('error', close).on('close', close)
  })
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => relay.close(resolve)))
  const port = (relay.address() as AddressInfo).port

  const warnings: string[] = []
  const dev = new SimDevice({
    server: svc.url,
    mqttUrl: `mqtt://127.0.0.1:${port}`,
    name: 'stalled',
    display: resolveProfile('bw-800x480'),
    statePath: join(dir, 'stalled.json'),
    claimToken: token,
    subackTimeoutMs: 500,
    reconnectMinMs: 50,
    reconnectMaxMs: 200,
  })
  dev.on('warning', (w) => warnings.push(w.message))
  t.teardown(() => dev.stop())
  await dev.start()
  t.equal(swallowed, 1, 'the first SUBSCRIBE was lost')
  t.match(warnings.join('\n'), /no SUBACK for devices\/[^/]+\/prompt within 0\.5 s; reconnecting/)
  t.ok(dev.stats.reconnects >= 1, 'it reconnected')

  // Subscribed for real this time: a command reaches it.
  const identified = nextEvent(dev, 'identify')
  t.equal((await call(svc, 'POST', `/api/device/${dev.deviceId}/command`, token, { command: 'identify' })).status, 202)
  t.equal((await identified).deviceId, dev.deviceId)
})
