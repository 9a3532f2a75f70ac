// The fleet-wide topic: every device may subscribe to fleet/cmd (by its exact name, no wildcards
// around it); only the service publishes there, a device's publish reaches nobody.
import t from 'tap'
import type { PublishPacket } from 'aedes'
import type { MqttClient } from 'mqtt'
import { FLEET_TOPIC } from '../../src/mqtt/contract.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, mqttUrl, nextMessage } from '../helpers/mqtt.js'

let svc: TestApp
let a: PairedDevice
let b: PairedDevice

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('fleet'))
  a = await pairDevice(svc, token, { name: 'A' })
  // A device of another account: the fleet topic is not scoped to an owner.
  const { token: other } = await signUp(makeClient(svc.url).client, uniqueEmail('fleet-other'))
  b = await pairDevice(svc, other, { name: 'B' })
})

const asDevice = (dev: PairedDevice) => connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })

function granted(client: MqttClient, topic: string): Promise<number> {
  return new Promise((resolve, reject) => {
    client.subscribe(topic, { qos: 1 }, (err, _subs, packet) => {
      const code = (packet as { granted?: number[] } | undefined)?.granted?.[0]
      if (code === undefined) reject(err ?? new Error('no SUBACK'))
      else resolve(code)
    })
  })
}

const servicePublish = (body: object) =>
  new Promise<void>((resolve, reject) =>
    svc.app.broker!.aedes.publish(
      {
        cmd: 'publish',
        topic: FLEET_TOPIC,
        payload: Buffer.from(JSON.stringify(body)),
        qos: 1,
        retain: false,
        dup: false,
      } as PublishPacket,
      (err?: Error | null) => (err ? reject(err) : resolve()),
    ),
  )

t.test('every device may subscribe to the fleet topic and gets what the service publishes there', async (t) => {
  const ca = await asDevice(a)
  const cb = await asDevice(b)
  t.teardown(() => Promise.all([close(ca), close(cb)]))
  t.equal(await granted(ca, FLEET_TOPIC), 1, 'QoS 1 granted to device A')
  t.equal(await granted(cb, FLEET_TOPIC), 1, 'QoS 1 granted to device B')
  const gotA = nextMessage(ca, FLEET_TOPIC)
  const gotB = nextMessage(cb, FLEET_TOPIC)
  await servicePublish({ action: 'refresh', n: 7 })
  t.same((await gotA).payload, { action: 'refresh', n: 7 })
  t.same((await gotB).payload, { action: 'refresh', n: 7 })
})

t.test('wildcards around the fleet topic are refused', async (t) => {
  const ca = await asDevice(a)
  t.teardown(() => close(ca))
  t.equal(await granted(ca, 'fleet/#'), 0x80, 'fleet/# refused')
  t.equal(await granted(ca, '+/cmd'), 0x80, '+/cmd refused')
  t.equal(await granted(ca, 'fleet/other'), 0x80, 'another fleet/ topic refused')
})

t.test("a device's publish on the fleet topic reaches no other device", async (t) => {
  const ca = await asDevice(a)
  const cb = await asDevice(b)
  t.teardown(() => Promise.all([close(ca), close(cb)]))
  t.equal(await granted(cb, FLEET_TOPIC), 1)
  const seen: string[] = []
  cb.on('message', (_topic, payload) => seen.push(payload.toString('utf8')))
  const dropsBefore = svc.app.broker!.stats.droppedPublishes
  await new Promise<void>((resolve, reject) =>
    ca.publish(FLEET_TOPIC, JSON.stringify({ forged: true }), { qos: 1 }, (err) => (err ? reject(err) : resolve())),
  )
  // The service's own message afterwards arrives; the forged one, published first, never did.
  const next = nextMessage(cb, FLEET_TOPIC)
  await servicePublish({ real: true })
  t.same((await next).payload, { real: true })
  t.same(seen, [JSON.stringify({ real: true })], 'only the service message was delivered')
  t.equal(svc.app.broker!.stats.droppedPublishes, dropsBefore + 1, 'the forged publish was counted as dropped')
})
