// One SUBSCRIBE packet with several topics on a persistent session gets its SUBACK and works,
// in every mode (with Redis persistence this used to hang).
import t from 'tap'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, mqttUrl, nextMessage } from '../helpers/mqtt.js'

t.test('a multi-topic SUBSCRIBE on a persistent session', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail())
  const dev = await pairDevice(svc, token)
  const c = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(c))
  const topics = ['prompt', 'image', 'cmd', 'config'].map((k) => `devices/${dev.deviceId}/${k}`)
  const granted = await new Promise<number[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no SUBACK within 5 s')), 5000)
    c.subscribe(topics, { qos: 1 }, (err, g) => {
      clearTimeout(timer)
      if (err) reject(err)
      else resolve((g ?? []).map((x) => x.qos))
    })
  })
  t.same(granted, [1, 1, 1, 1], 'every topic granted in one SUBACK')
  const got = nextMessage<{ n: number }>(c, `devices/${dev.deviceId}/cmd`)
  await svc.app.deviceLink.publish(dev.deviceId, 'cmd', { n: 7 })
  t.equal((await got).payload.n, 7)
})
