// Graceful shutdown: what the service asked to publish goes out first, connected devices are
// disconnected and each disconnect is recorded with reason server_shutdown.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

type Ev = { type: string; data: Record<string, unknown> }

t.test('closing the service disconnects devices with reason server_shutdown', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('shutdown'))
  const devs: PairedDevice[] = [await pairDevice(svc, token, { name: 'One' }), await pairDevice(svc, token, { name: 'Two' })]
  const clients: MqttClient[] = []
  const received = new Map<string, number[]>()
  const closed = new Set<string>()
  for (const dev of devs) {
    const c = await connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
    c.on('error', () => {})
    c.once('close', () => closed.add(dev.deviceId))
    t.equal(await subscribe(c, dev.topics.cmd!, 1), 1)
    received.set(dev.deviceId, [])
    c.on('message', (topic, payload) => {
      if (topic === dev.topics.cmd) received.get(dev.deviceId)!.push((JSON.parse(payload.toString('utf8')) as { seq: number }).seq)
    })
    clients.push(c)
  }
  t.teardown(() => clients.forEach((c) => c.end(true)))
  const get = async <T>(base: string, path: string) =>
    (await (await appFetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } })).json()) as T
  for (const dev of devs) await eventually(async () => (await get<{ isActive: boolean }>(svc.url, `/api/device/${dev.deviceId}`)).isActive)
  const connectedIds = await Promise.all(
    devs.map(
      async (dev) =>
        (await get<{ events: Ev[] }>(svc.url, `/api/device/${dev.deviceId}/events?limit=50`)).events.find(
          (e) => e.type === 'device.connected',
        )!.data.connectionId,
    ),
  )

  // Publishes requested just before shutdown are not dropped.
  const N = 50
  const pending = devs.flatMap((dev) => Array.from({ length: N }, (_, i) => svc.app.broker!.publish(dev.deviceId, 'cmd', { seq: i })))
  await svc.close()
  await Promise.all(pending)
  for (const dev of devs) {
    t.same(
      received.get(dev.deviceId),
      Array.from({ length: N }, (_, i) => i),
      `${dev.deviceId}: everything published before shutdown arrived, in order`,
    )
  }
  await eventually(async () => closed.size === devs.length)
  t.pass('every device saw its connection close')

  // A fresh service on the same data shows what happened.
  const again = await startApp(t, {
    env: { DEVICE_POLL_INTERVAL: '0' },
    reuse: { dataDir: svc.dataDir, databaseUrl: svc.config.databaseUrl, redisPrefix: svc.config.redisPrefix },
  })
  try {
    for (const [i, dev] of devs.entries()) {
      const { events } = await get<{ events: Ev[] }>(again.url, `/api/device/${dev.deviceId}/events?limit=50`)
      const last = events.find((e) => e.type === 'device.disconnected')
      t.ok(last, 'a disconnect was recorded')
      t.equal(last!.data.reason, 'server_shutdown')
      t.equal(last!.data.connectionId, connectedIds[i], 'for the connection that was live')
      t.equal(last!.data.clientId, dev.deviceId)
      t.equal(events[0]!.type, 'device.disconnected', 'it is the newest event')
      const d = await get<{ isActive: boolean; last_seen_at: string | null }>(again.url, `/api/device/${dev.deviceId}`)
      t.equal(d.isActive, false, 'no longer active')
      t.ok(d.last_seen_at)
    }

    // The devices' credentials still work on the restarted service.
    const dev = devs[0]!
    const c = await connect(mqttUrl(again), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password })
    t.equal(await subscribe(c, dev.topics.cmd!, 1), 1)
    const got = nextMessage<{ marker: string }>(c, dev.topics.cmd!)
    await again.app.broker!.publish(dev.deviceId, 'cmd', { marker: 'after-restart' })
    t.equal((await got).payload.marker, 'after-restart')
    await close(c)
    await eventually(async () => !(await get<{ isActive: boolean }>(again.url, `/api/device/${dev.deviceId}`)).isActive)
  } finally {
    await again.close()
  }
})
