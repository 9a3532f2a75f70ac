// Messages that finish publishing out of order all arrive. A QoS 1 message to a persistent
// session is stored for the session before it is sent, a QoS 0 one is not, so a QoS 0 message
// published just after a QoS 1 one can reach the device first. aedes' duplicate filter then
// dropped the QoS 1 message (its broker counter was lower); with Redis this lost prompts.
import t from 'tap'
import type { PublishPacket } from 'aedes'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'

t.test('QoS 1 commands interleaved with QoS 0 events to a persistent session: none lost', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('ordering'))
  const dev = await pairDevice(svc, token)
  const device = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(device))
  await subscribe(device, `devices/${dev.deviceId}/#`)
  const commands = new Set<number>()
  device.on('message', (topic, payload) => {
    if (topic.endsWith('/cmd')) commands.add((JSON.parse(payload.toString()) as { seq: number }).seq)
  })

  const broker = svc.app.broker!
  const n = 30
  const sends: Promise<unknown>[] = []
  for (let seq = 0; seq < n; seq++) {
    sends.push(broker.publish(dev.deviceId, 'cmd', { seq }))
    sends.push(
      new Promise<void>((resolve) =>
        broker.aedes.publish(
          {
            cmd: 'publish',
            topic: `devices/${dev.deviceId}/events`,
            payload: Buffer.from(JSON.stringify({ seq })),
            qos: 0,
            retain: false,
            dup: false,
          } as PublishPacket,
          () => resolve(),
        ),
      ),
    )
  }
  await Promise.all(sends)
  await eventually(async () => commands.size === n, 10_000).catch(() => {})
  t.equal(
    commands.size,
    n,
    `all ${n} commands arrived (missing: ${[...Array(n).keys()].filter((s) => !commands.has(s)).join(', ') || 'none'})`,
  )
})
