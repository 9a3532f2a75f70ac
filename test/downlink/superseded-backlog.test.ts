// A frame that wakes into its stored session is handed what is current, not a backlog of what
// newer messages replaced: four configs and four images published while it slept arrive as one
// config and one image (radio time and battery), in the broker's memory and in Redis alike.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import mqtt, { type MqttClient } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

type Message = { topic: string; body: Record<string, unknown> }
const KINDS = ['prompt', 'image', 'config', 'cmd'] as const

/** A device session with a stored session; subscribes to every downlink topic when the session is new. */
async function session(svc: TestApp, dev: PairedDevice): Promise<{ client: MqttClient; seen: Message[]; resumed: boolean }> {
  const seen: Message[] = []
  const client = mqtt.connect(mqttUrl(svc), {
    clientId: dev.deviceId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
    reconnectPeriod: 0,
    protocolVersion: 4,
  })
  // Listening before the CONNACK: a resumed session's stored messages follow it at once.
  client.on('message', (topic, payload) =>
    seen.push({ topic: topic.split('/').pop()!, body: JSON.parse(payload.toString('utf8')) as Record<string, unknown> }),
  )
  const connack = await new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', reject)
  })
  if (!connack.sessionPresent) for (const kind of KINDS) await subscribe(client, dev.topics[kind]!)
  return { client, seen, resumed: connack.sessionPresent }
}

t.test('a waking frame gets the newest config and image, not the ones they replaced', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('backlog'))
  const api = (method: string, path: string, body?: unknown) =>
    appFetch(`${svc.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
  const dev = await pairDevice(svc, token)
  const first = await session(svc, dev)
  t.notOk(first.resumed, 'the first session is new')
  const config = await eventually(async () => first.seen.find((m) => m.topic === 'config'))
  await new Promise<void>((resolve, reject) =>
    first.client.publish(dev.topics.status!, JSON.stringify({ battery: 90, configVersion: config.body.version }), { qos: 1 }, (err) =>
      err ? reject(err) : resolve(),
    ),
  )
  await close(first.client)

  const images: string[] = []
  for (let n = 1; n <= 4; n++) {
    t.equal((await api('PATCH', `/api/device/${dev.deviceId}`, { name: `Name ${n}` })).status, 200)
    const imageId = randomUUID()
    images.push(imageId)
    await svc.app.deviceLink.publish(dev.deviceId, 'image', {
      imageId,
      url: `${svc.url}/nowhere/${imageId}`,
      format: 'png',
      width: 1,
      height: 1,
      bytes: 1,
      sha256: '0'.repeat(64),
      contentType: 'image/png',
    })
  }
  const marker = await api('POST', `/api/device/${dev.deviceId}/command`, { command: 'identify' })
  t.equal(marker.status, 202)
  const { commandId } = (await marker.json()) as { commandId: string }

  const next = await session(svc, dev)
  t.teardown(() => next.client.end(true))
  t.ok(next.resumed, 'the frame wakes into its stored session')
  await eventually(async () => next.seen.some((m) => m.body.commandId === commandId))
  // Anything still on its way arrives within a moment of the last message.
  await new Promise((r) => setTimeout(r, 500))
  t.same(
    next.seen.filter((m) => m.topic === 'config').map((m) => m.body.name),
    ['Name 4'],
    'one config: the newest',
  )
  t.same(
    next.seen.filter((m) => m.topic === 'image').map((m) => m.body.imageId),
    [images[3]],
    'one image: the newest',
  )
  t.same(
    next.seen.filter((m) => m.topic === 'cmd').map((m) => m.body.commandId),
    [commandId],
    'and the command, once',
  )

  // The replaced ones left the stored queue too: the next wake replays none of them.
  await close(next.client)
  const second = await api('POST', `/api/device/${dev.deviceId}/command`, { command: 'identify' })
  const marker2 = ((await second.json()) as { commandId: string }).commandId
  const last = await session(svc, dev)
  t.teardown(() => last.client.end(true))
  t.ok(last.resumed, 'it wakes into its stored session again')
  await eventually(async () => last.seen.some((m) => m.body.commandId === marker2))
  await new Promise((r) => setTimeout(r, 500))
  t.same(
    last.seen.map((m) => m.topic),
    ['cmd'],
    'only the new command: nothing replaced was left stored',
  )
})
