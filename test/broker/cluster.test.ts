// Two service instances sharing one Redis and one PostgreSQL database (what a cluster is): a
// device on instance A receives what instance B publishes, reconnecting to B gets what queued
// while it was away from A, and a disconnect through A ends the session held by B.
import t from 'tap'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { clusterSkip, startCluster } from '../helpers/cluster.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

const skip = await clusterSkip()
const cluster = startCluster

t.test('two instances on one Redis', { skip }, async (t) => {
  const [a, b] = await cluster(t)
  const { client } = makeClient(a.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(a, token)

  const onA = await connect(mqttUrl(a), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  await subscribe(onA, `devices/${dev.deviceId}/cmd`)

  const first = nextMessage<{ n: number }>(onA, `devices/${dev.deviceId}/cmd`)
  await b.app.deviceLink.publish(dev.deviceId, 'cmd', { n: 1 })
  t.equal((await first).payload.n, 1, 'published on B, delivered on A')

  await close(onA)
  await b.app.deviceLink.publish(dev.deviceId, 'cmd', { n: 2 })

  const onB = await connect(mqttUrl(b), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  const got: number[] = []
  onB.on('message', (_topic, payload) => got.push((JSON.parse(payload.toString('utf8')) as { n: number }).n))
  // n:1 may come again first: its PUBACK can still be unsent when the device closed (QoS 1 redelivers).
  await eventually(async () => got.includes(2))
  t.same(
    [...new Set(got)].filter((n) => n !== 1),
    [2],
    'what queued while offline arrives on the other instance',
  )

  const closed = new Promise<void>((resolve) => onB.once('close', () => resolve()))
  const res = await appFetch(`${a.url}/api/device/disconnect`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ deviceId: dev.deviceId }),
  })
  t.equal(res.status, 200)
  await closed
  t.pass('a disconnect through A ended the session held by B')
  onB.end(true)
})

t.test('a takeover across instances and the shared offline queue cap', { skip }, async (t) => {
  const [a, b] = await cluster(t, { MQTT_OFFLINE_QUEUE_LIMIT: '3' })
  const { token } = await signUp(makeClient(a.url).client, uniqueEmail())
  const dev = await pairDevice(a, token)
  const creds = { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false }
  const events = async () =>
    (
      (await (
        await appFetch(`${a.url}/api/device/${dev.deviceId}/events?limit=50`, { headers: { authorization: `Bearer ${token}` } })
      ).json()) as { events: Array<{ type: string; data: Record<string, unknown> }> }
    ).events
  const detail = async () =>
    (await (await appFetch(`${a.url}/api/device/${dev.deviceId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      isActive: boolean
    }

  // The broker's offline queue is capped across the cluster (the stored queue itself is
  // counted); what it refuses waits in the outbox and follows the queued ones, in order.
  const first = await connect(mqttUrl(a), creds)
  await subscribe(first, `devices/${dev.deviceId}/cmd`)
  await close(first)
  // Offline as the cluster sees it before B publishes: on a busy machine A records the disconnect later.
  await eventually(async () => !(await detail()).isActive)
  for (let n = 1; n <= 5; n++) await b.app.deviceLink.publish(dev.deviceId, 'cmd', { n })
  t.equal(b.app.broker!.stats.droppedOffline, 2, 'the broker took three of five on B: the device was offline with 3 queued')
  const again = await connect(mqttUrl(a), creds)
  const got: number[] = []
  again.on('message', (_topic, payload) => got.push((JSON.parse(payload.toString('utf8')) as { n: number }).n))
  await eventually(async () => got.length >= 5)
  t.same(got, [1, 2, 3, 4, 5], 'all five arrive, in order: three from the broker, two from the outbox')

  // Takeover: the device, connected to A, connects to B. Its old connection is a takeover, and it stays online.
  await eventually(async () => (await detail()).isActive)
  const closedOnA = new Promise<void>((resolve) => again.once('close', () => resolve()))
  const onB = await connect(mqttUrl(b), creds)
  t.teardown(() => onB.end(true))
  await closedOnA
  t.pass('A closed the old connection')
  const disconnect = await eventually(async () =>
    (await events()).find(
      (e) =>
        e.type === 'device.disconnected' &&
        e.data.connectionId &&
        String(e.data.connectionId).startsWith('node-a~') &&
        e.data.reason !== 'client_disconnect',
    ),
  )
  t.equal(disconnect.data.reason, 'takeover', 'recorded as a takeover, not a socket error')
  await new Promise((r) => setTimeout(r, 300))
  t.equal((await detail()).isActive, true, 'the device stays active through B')
})
