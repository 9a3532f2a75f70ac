// The ACL matrix of test/helpers/acl-matrix.ts on the embedded broker, with real clients: the
// table test/broker/rabbitmq.test.ts runs through RabbitMQ, so both brokers grant the same rights.
import t from 'tap'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { ACL_MATRIX } from '../helpers/acl-matrix.js'
import { connect, eventually, mqttUrl, subackCodes } from '../helpers/mqtt.js'

t.test('the ACL matrix on the embedded broker', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('acl-matrix'))
  const dev = await pairDevice(svc, token)
  const other = await pairDevice(svc, token)
  const stats = svc.app.broker!.stats
  const client = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
  t.teardown(() => client.end(true))
  for (const c of ACL_MATRIX(dev.deviceId, other.deviceId)) {
    if (c.action === 'subscribe') {
      const [code] = await subackCodes(client, [c.topic], 1)
      t.equal(code !== 0x80, c.allowed, `subscribe ${c.topic}: ${c.allowed ? 'allowed' : 'refused'}`)
    } else {
      // MQTT 3.1.1 has no negative PUBACK: a refused publish is acknowledged and counted as dropped.
      const before = stats.droppedPublishes
      await client.publishAsync(c.topic, JSON.stringify({ ok: true, battery: 50 }), { qos: 1 })
      const dropped = await eventually(async () => ({ n: stats.droppedPublishes - before }), 1000)
      t.equal(dropped.n === 0, c.allowed, `publish ${c.topic}: ${c.allowed ? 'delivered' : 'dropped'}`)
    }
  }
})
