// The MQTT side as an abusive device or app drives it, against the whole service: acknowledgements
// of nothing and oversized messages, thousands of filters in one SUBSCRIBE, a QoS 1 flood, U+0000,
// duplicate filters, and bytes that are not MQTT. Nothing may be stored for what names nothing
// real, the broker must answer every packet as the protocol says or close that connection only,
// and HTTP and other devices must be served throughout and afterwards.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { connect as netConnect } from 'node:net'
import { count, eq } from 'drizzle-orm'
import { event } from '../../src/events/tables.js'
import mqttPacket from 'mqtt-packet'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { connect, eventually, mqttUrl, nextMessage, subackCodes, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

t.test('abuse over MQTT: bounded, answered, and the service keeps serving', async (t) => {
  const svc = await startApp(t, {
    env: { DEVICE_POLL_INTERVAL: '0', MQTT_INBOUND_RATE: '100', MQTT_INBOUND_BURST: '200', MQTT_MAX_SUBSCRIPTIONS: '500' },
  })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('mqtt-fuzz'))
  const dev = await pairDevice(svc, token)
  const http = async () => (await appFetch(`${svc.url}/api/device`, { headers: { authorization: `Bearer ${token}` } })).status
  const events = async () => {
    const [row] = await svc.app.database.db.select({ n: count() }).from(event).where(eq(event.deviceId, dev.deviceId))
    return Number(row!.n)
  }
  const device = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: true })
  t.teardown(() => device.end(true))
  const before = await events()
  const stats = svc.app.broker!.uplinkStats
  const guard = svc.app.broker!.server.guardStats

  // 150 acknowledgements of commands that do not exist (under the rate's burst), some oversized.
  for (let i = 0; i < 150; i++) {
    await device.publishAsync(
      dev.topics.ack!,
      JSON.stringify({ commandId: randomUUID(), ok: true, pad: 'x'.repeat(i % 3 === 0 ? 250_000 : 1000) }),
      { qos: 1 },
    )
  }
  await eventually(async () => stats.unmatchedAcks + stats.oversized >= 150)
  t.ok((await events()) - before <= 1, 'acknowledgements of nothing stored nothing')

  // An app asks for 2,000 filters at once: one code each, none granted past the cap, one query per batch.
  const app = await connect(mqttUrl(svc), { clientId: `app-${randomUUID().slice(0, 8)}`, username: 'user', password: token, clean: true })
  t.teardown(() => app.end(true))
  const filters = [`devices/${dev.deviceId}/state`, ...Array.from({ length: 1999 }, () => `devices/${randomUUID()}/state`)]
  const [codes, during] = await Promise.all([subackCodes(app, filters), http()])
  t.equal(codes.length, 2000, 'one return code per filter')
  t.equal(codes[0], 1, 'its own device is granted')
  t.ok(
    codes.slice(1).every((c) => c === 0x80),
    'every other filter refused',
  )
  t.equal(guard.subscriptionsCapped, 1500, 'filters past MQTT_MAX_SUBSCRIPTIONS refused without a lookup')
  t.equal(during, 200, 'HTTP answered meanwhile')

  // A duplicate filter: still one code per filter, and mqtt.js keeps the connection.
  t.same(await subackCodes(device, [dev.topics.cmd!, dev.topics.cmd!]), [1, 1], 'a SUBSCRIBE naming a filter twice')
  t.equal(device.connected, true)

  // A QoS 1 flood of status reports from another device: acknowledged, mostly dropped, counted
  // (and if it lasts over three windows on a slow machine, that device is disconnected).
  const noisy = await pairDevice(svc, token)
  const flooder = await connect(mqttUrl(svc), {
    clientId: noisy.deviceId,
    username: noisy.deviceId,
    password: noisy.password,
    clean: true,
    reconnectPeriod: 0,
  })
  t.teardown(() => flooder.end(true))
  // mqtt.js keeps unacknowledged QoS 1 publishes for a reconnect that reconnectPeriod 0 never
  // makes: when the service disconnects the flooder, ending the client settles them as refused.
  flooder.once('close', () => flooder.end(true))
  const outcomes = await Promise.all(
    Array.from({ length: 1500 }, (_, i) =>
      flooder.publishAsync(noisy.topics.status!, JSON.stringify({ battery: i % 100 }), { qos: 1 }).then(
        () => 'acked',
        () => 'closed',
      ),
    ),
  )
  t.ok(
    outcomes.filter((o) => o === 'acked').length >= 1000 || guard.rateClosed === 1,
    'acknowledged, unless the flood outlasted three windows and was disconnected',
  )
  t.ok(guard.rateDropped > 0, `the excess was dropped (${guard.rateDropped} of 1500)`)
  t.equal(await http(), 200, 'HTTP answers after the flood')
  t.equal(device.connected, true, 'the other device was not affected')

  // U+0000 in a topic and bytes that are not MQTT: that connection closes, nothing else.
  for (const [label, bytes] of [
    [
      'U+0000 in a topic',
      mqttPacket.generate({
        cmd: 'publish',
        topic: `devices/${dev.deviceId}/up/status\u0000`,
        payload: '{}',
        qos: 0,
        retain: false,
        dup: false,
      }),
    ],
    ['random bytes', Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 97 + 13) % 256))],
  ] as const) {
    const socket = netConnect(svc.app.mqttPort!, '127.0.0.1')
    socket.on('error', () => {})
    await new Promise((resolve) => socket.once('connect', resolve))
    const gone = new Promise<boolean>((resolve) => socket.once('close', () => resolve(true)))
    const connack = new Promise<void>((resolve) => socket.once('data', () => resolve()))
    socket.write(
      mqttPacket.generate({
        cmd: 'connect',
        protocolId: 'MQTT',
        protocolVersion: 4,
        clean: true,
        clientId: noisy.deviceId,
        username: noisy.deviceId,
        password: Buffer.from(noisy.password),
        keepalive: 30,
      }),
    )
    await connack
    socket.write(bytes)
    t.ok(await Promise.race([gone, new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]), `${label}: the connection is closed`)
  }

  // Afterwards: a device still connects, subscribes and gets a command; HTTP still answers.
  const again = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: true })
  t.teardown(() => again.end(true))
  await subscribe(again, dev.topics.cmd!)
  const cmd = nextMessage<{ command: string }>(again, dev.topics.cmd!)
  const sent = await appFetch(`${svc.url}/api/device/${dev.deviceId}/command`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'identify' }),
  })
  t.equal(sent.status, 202)
  t.equal((await cmd).payload.command, 'identify', 'a command still reaches the device')
  t.equal(await http(), 200)
})
