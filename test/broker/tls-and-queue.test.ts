// The optional TLS listener, the MQTT listeners' own addresses, and the cap on an offline device's queue.
import t from 'tap'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import selfsigned from 'selfsigned'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

/** A self-signed certificate for localhost: its own CA. */
const selfSigned = () =>
  selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    notAfterDate: new Date(Date.now() + 86_400_000),
    keySize: 2048,
  })

t.test('MQTT over TLS with a configured certificate', async (t) => {
  const pems = await selfSigned()
  const dir = t.testdir({})
  await writeFile(join(dir, 'cert.pem'), pems.cert)
  await writeFile(join(dir, 'key.pem'), pems.private)
  const svc = await startApp(t, {
    env: { MQTT_TLS_CERT: join(dir, 'cert.pem'), MQTT_TLS_KEY: join(dir, 'key.pem'), MQTT_TLS_PORT: '0', DEVICE_POLL_INTERVAL: '0' },
  })
  t.type(svc.app.mqttTlsPort, 'number')
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(svc, token)
  const url = `mqtts://127.0.0.1:${svc.app.mqttTlsPort}`
  await t.rejects(
    connect(url, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password }),
    'an untrusted certificate is refused by default',
  )
  const c = await connect(url, {
    clientId: dev.deviceId,
    username: dev.deviceId,
    password: dev.password,
    ca: pems.cert,
    servername: 'localhost',
  })
  t.equal(await subscribe(c, `devices/${dev.deviceId}/cmd`), 1, 'a device subscribes over TLS')
  await close(c)
  t.equal(dev.mqttUrl, url, 'its credentials name the TLS listener, on the port it bound')
  const other = await selfSigned()
  await t.rejects(
    connect(url, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, ca: other.cert, servername: 'localhost' }),
    'a certificate from another CA is refused',
  )
})

t.test('MQTT TLS certificate replaced without a restart (what SIGHUP does)', async (t) => {
  const first = await selfSigned()
  const dir = t.testdir({})
  const certFile = join(dir, 'cert.pem')
  const keyFile = join(dir, 'key.pem')
  await writeFile(certFile, first.cert)
  await writeFile(keyFile, first.private)
  const svc = await startApp(t, { env: { MQTT_TLS_CERT: certFile, MQTT_TLS_KEY: keyFile, MQTT_TLS_PORT: '0', DEVICE_POLL_INTERVAL: '0' } })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(svc, token)
  const as = (ca: string) => ({ clientId: dev.deviceId, username: dev.deviceId, password: dev.password, ca, servername: 'localhost' })
  const before = await connect(dev.mqttUrl, as(first.cert))

  const renewed = await selfSigned()
  await writeFile(certFile, renewed.cert)
  await writeFile(keyFile, renewed.private)
  svc.app.reloadMqttTls?.()
  await t.rejects(connect(dev.mqttUrl, as(first.cert)), 'new handshakes no longer get the old certificate')
  t.equal(await subscribe(before, `devices/${dev.deviceId}/cmd`), 1, 'an open connection goes on across the reload')
  const after = await connect(dev.mqttUrl, as(renewed.cert))
  t.equal(await subscribe(after, `devices/${dev.deviceId}/cmd`), 1, 'new handshakes get the renewed one')
  await close(after)
  await close(before)

  await writeFile(keyFile, first.private)
  t.throws(() => svc.app.reloadMqttTls?.(), 'a key that does not match the certificate is refused')
  const still = await connect(dev.mqttUrl, as(renewed.cert))
  t.ok(still.connected, 'and the certificate in use stays')
  await close(still)
})

t.test('MQTT_HOST and MQTT_TLS_HOST bind the MQTT listeners apart from HOST', async (t) => {
  const pems = await selfSigned()
  const dir = t.testdir({ 'cert.pem': pems.cert, 'key.pem': pems.private })
  // Other loopback addresses stand for the network interfaces a deployment would name.
  const svc = await startApp(t, {
    env: {
      MQTT_HOST: '127.0.0.2',
      MQTT_TLS_HOST: '127.0.0.3',
      MQTT_TLS_CERT: join(dir, 'cert.pem'),
      MQTT_TLS_KEY: join(dir, 'key.pem'),
      MQTT_TLS_PORT: '0',
      DEVICE_POLL_INTERVAL: '0',
    },
  })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(svc, token)
  const opts = { clientId: dev.deviceId, username: dev.deviceId, password: dev.password }
  await t.rejects(connect(`mqtt://127.0.0.1:${svc.app.mqttPort}`, opts), 'plain MQTT is not on HOST')
  await close(await connect(`mqtt://127.0.0.2:${svc.app.mqttPort}`, opts))
  await t.rejects(
    connect(`mqtts://127.0.0.2:${svc.app.mqttTlsPort}`, { ...opts, ca: pems.cert, servername: 'localhost' }),
    'nor TLS on MQTT_HOST',
  )
  await close(await connect(`mqtts://127.0.0.3:${svc.app.mqttTlsPort}`, { ...opts, ca: pems.cert, servername: 'localhost' }))
  t.equal((await appFetch(`${svc.url}/ok`)).status, 200, 'HTTP stays where it was')
})

t.test('an offline device keeps at most MQTT_OFFLINE_QUEUE_LIMIT messages', async (t) => {
  const svc = await startApp(t, { env: { MQTT_OFFLINE_QUEUE_LIMIT: '3', DEVICE_POLL_INTERVAL: '0' } })
  if (svc.config.redisUrl) {
    t.equal(svc.app.broker?.stats.droppedOffline, 0)
    t.comment('with Redis the persistence bounds session delivery; the per-node cap applies only without it')
    return
  }
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(svc, token)
  const opts = { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false }
  const first = await connect(mqttUrl(svc), opts)
  await subscribe(first, `devices/${dev.deviceId}/cmd`)
  await close(first)
  for (let n = 1; n <= 5; n++) await svc.app.deviceLink.publish(dev.deviceId, 'cmd', { n })
  t.equal(svc.app.broker?.stats.droppedOffline, 2, 'two beyond the cap were dropped')
  const received: number[] = []
  const again = await new Promise<import('mqtt').MqttClient>((resolve, reject) => {
    import('mqtt').then(({ default: mqtt }) => {
      const c = mqtt.connect(mqttUrl(svc), { ...opts, reconnectPeriod: 0, protocolVersion: 4 })
      c.on('message', (_topic, payload) => received.push((JSON.parse(payload.toString()) as { n: number }).n))
      c.once('connect', () => resolve(c))
      c.once('error', reject)
    }, reject)
  })
  // Up to 10 s: on a loaded machine the stored messages can take seconds to follow the CONNACK.
  for (let i = 0; i < 200 && received.length < 3; i++) await new Promise((r) => setTimeout(r, 50))
  // The durable downlink resends the two the broker dropped once the device is back, so 4 and 5
  // may already follow: the broker's own queue is what comes first.
  t.same(received.slice(0, 3), [1, 2, 3], 'the first three, in order, arrive on reconnect')
  await close(again)
})
