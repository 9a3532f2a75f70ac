// Redis restarts under a running service in cluster mode and loses every key (it keeps nothing on
// disk): the broker's stored sessions and queues are gone, the durable downlink is not. A frame
// that slept through it gets every prompt, once, in the order they were sent; one that stayed
// connected keeps getting them in order too.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import mqtt, { type MqttClient } from 'mqtt'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { ownRedisUnavailable, startOwnRedis } from '../helpers/redis-server.js'
import { appFetch } from '../helpers/app-fetch.js'

const KINDS = ['prompt', 'image', 'config', 'cmd'] as const
const missing = ownRedisUnavailable()

async function online(url: string, dev: PairedDevice, got: string[]): Promise<MqttClient> {
  const client = mqtt.connect(url, {
    clientId: dev.deviceId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
    reconnectPeriod: 0,
    protocolVersion: 4,
  })
  client.on('message', (topic, payload) => {
    if (topic.endsWith('/prompt')) got.push((JSON.parse(payload.toString('utf8')) as { promptId: string }).promptId)
  })
  const connack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', reject)
  })
  if (!connack.sessionPresent) for (const kind of KINDS) await subscribe(client, dev.topics[kind]!)
  return client
}

t.test('prompts keep their order per frame across a Redis restart that lost every key', { skip: missing }, async (t) => {
  const redis = await startOwnRedis(t)
  const svc = await startApp(t, {
    env: { DEVICE_POLL_INTERVAL: '0', REDIS_URL: redis.url, REDIS_PREFIX: `test:${randomBytes(6).toString('hex')}:` },
  })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('redis-restart'))
  const post = async (deviceId: string, text: string) => {
    const res = await appFetch(`${svc.url}/api/prompts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text, deviceId }),
    })
    if (res.status !== 201) throw new Error(`prompt: ${res.status} ${await res.text()}`)
    return ((await res.json()) as { id: string }).id
  }
  const sleeper = await pairDevice(svc, token, { name: 'Sleeper' })
  const awake = await pairDevice(svc, token, { name: 'Awake' })
  await close(await online(mqttUrl(svc), sleeper, []))
  const awakeGot: string[] = []
  const awakeClient = await online(mqttUrl(svc), awake, awakeGot)
  t.teardown(() => awakeClient.end(true))

  const sent = { sleeper: [] as string[], awake: [] as string[] }
  for (let n = 0; n < 10; n++) {
    sent.sleeper.push(await post(sleeper.deviceId, `before ${n}`))
    sent.awake.push(await post(awake.deviceId, `before ${n}`))
  }
  await eventually(async () => awakeGot.length >= 10)

  await redis.stop()
  await redis.start()
  // The service finds Redis again by itself; prompts sent meanwhile wait for it.
  for (let n = 0; n < 10; n++) {
    sent.sleeper.push(await post(sleeper.deviceId, `after ${n}`))
    sent.awake.push(await post(awake.deviceId, `after ${n}`))
  }

  const sleeperGot: string[] = []
  const woke = await online(mqttUrl(svc), sleeper, sleeperGot)
  t.teardown(() => woke.end(true))
  await eventually(async () => new Set(sleeperGot).size >= 20 && new Set(awakeGot).size >= 20, 30_000).catch(() => {})
  // Anything still on its way arrives within a moment.
  await new Promise((r) => setTimeout(r, 500))
  t.same(sleeperGot, sent.sleeper, 'the frame that slept: all 20 prompts, once each, in order')
  t.same([...new Set(awakeGot)], sent.awake, 'the frame that stayed connected: all 20, in order')
})
