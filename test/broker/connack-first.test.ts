// MQTT-3.2.0-1: the first packet a server sends a client is CONNACK. A device resuming its
// persistent session while the service keeps publishing to it must never see a PUBLISH first
// (aedes restores the session's subscriptions before it writes the CONNACK, so a publish landing
// in between went out ahead of it). Raw sockets, so nothing in a client library hides the order.
import t from 'tap'
import { connect as netConnect } from 'node:net'
import mqttPacket from 'mqtt-packet'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, mqttUrl, subscribe } from '../helpers/mqtt.js'

const RECONNECTS = 40

t.test('every reconnect of a persistent session starts with CONNACK while the service publishes', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('connack'))
  const dev = await pairDevice(svc, token)
  const first = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  await subscribe(first, dev.topics.cmd!)
  await close(first)

  // The service publishes to the device without pause for the whole test, several at a time
  // (straight to the broker: the window is in the broker, and this keeps it busy).
  let publishing = true
  let sent = 0
  const lane = async () => {
    while (publishing) {
      await svc.app.broker!.publish(dev.deviceId, 'cmd', { commandId: `c-${sent}`, command: 'identify', args: {} })
      sent += 1
      // A publish past the offline cap resolves at once: let the sockets have their turn.
      await new Promise((r) => setImmediate(r))
    }
  }
  const pump = Promise.all(Array.from({ length: 8 }, lane))
  t.teardown(async () => {
    publishing = false
    await pump
  })

  const firsts: string[] = []
  for (let i = 0; i < RECONNECTS; i++) {
    const port = svc.app.mqttPort!
    const socket = netConnect(port, '127.0.0.1')
    const parser = mqttPacket.parser({ protocolVersion: 4 })
    const got = new Promise<{ cmd: string; sessionPresent?: boolean }>((resolve, reject) => {
      parser.once('packet', (p) => resolve(p as { cmd: string; sessionPresent?: boolean }))
      socket.once('error', reject)
      socket.once('close', () => reject(new Error('closed before any packet')))
    })
    socket.on('data', (chunk) => parser.parse(chunk))
    socket.write(
      mqttPacket.generate({
        cmd: 'connect',
        protocolId: 'MQTT',
        protocolVersion: 4,
        clean: false,
        clientId: dev.deviceId,
        keepalive: 30,
        username: dev.deviceId,
        password: Buffer.from(dev.password),
      }),
    )
    const packet = await got
    firsts.push(packet.cmd)
    // Leave without acknowledging, so the session keeps queued and in-flight messages: the hard case.
    socket.write(mqttPacket.generate({ cmd: 'disconnect' }))
    socket.end()
    await new Promise<void>((resolve) => socket.once('close', () => resolve()))
  }
  publishing = false
  await pump
  t.ok(sent > RECONNECTS, `the service published ${sent} messages meanwhile`)
  t.same(
    firsts.filter((c) => c !== 'connack'),
    [],
    `all ${RECONNECTS} connections got CONNACK first`,
  )
})
