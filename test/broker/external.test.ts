// External-broker mode against the machine's Mosquitto: the service publishes through it as a
// client, consumes uplink from it, and answers the broker's HTTP auth hook.
import t from 'tap'
import mqtt from 'mqtt'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { eventually, nextMessage } from '../helpers/mqtt.js'
import { mosquittoUrl } from '../helpers/services.js'
import { appFetch } from '../helpers/app-fetch.js'

const broker = await mosquittoUrl()
const HOOK_SECRET = 'hook-secret-0123456789'

t.test('external broker mode', { skip: broker ? false : 'no Mosquitto on 127.0.0.1:1883' }, async (t) => {
  const svc = await startApp(t, { env: { MQTT_EXTERNAL_URL: broker as string, MQTT_AUTH_SECRET: HOOK_SECRET, DEVICE_POLL_INTERVAL: '0' } })
  t.equal(svc.app.broker, undefined, 'no embedded broker starts')
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(svc, token)

  const watcher = await mqtt.connectAsync(broker as string, { clientId: `watch-${dev.deviceId.slice(0, 8)}`, reconnectPeriod: 0 })
  t.teardown(() => watcher.endAsync())
  await watcher.subscribeAsync(`devices/${dev.deviceId}/cmd`, { qos: 1 })
  const arrives = nextMessage<{ command: string }>(watcher, `devices/${dev.deviceId}/cmd`)
  const res = await appFetch(`${svc.url}/api/device/${dev.deviceId}/command`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'refresh' }),
  })
  t.equal(res.status, 202)
  t.equal((await arrives).payload.command, 'refresh', 'a plain client subscribed on Mosquitto receives it')

  // Uplink published on the external broker reaches the service.
  await watcher.publishAsync(`devices/${dev.deviceId}/up/status`, JSON.stringify({ battery: 77, configVersion: 1, shownImageId: null }), {
    qos: 1,
  })
  const synced = await eventually(async () => {
    const d = (await (
      await appFetch(`${svc.url}/api/device/${dev.deviceId}`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as {
      isSynced: boolean
    }
    return d.isSynced ? d : null
  })
  t.equal(synced.isSynced, true, 'status from the external broker marks the device synced')

  const hook = (body: object, secret = HOOK_SECRET) =>
    appFetch(`${svc.url}/api/device/mqtt-auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify(body),
    })
  const allow = (await (await hook({ clientid: dev.deviceId, username: dev.deviceId, password: dev.password })).json()) as {
    result: string
  }
  t.equal(allow.result, 'allow', 'the device is allowed')
  const stranger = (await (await hook({ clientid: 'x', username: 'x', password: 'y' })).json()) as { result: string }
  t.equal(stranger.result, 'deny', 'a stranger is denied')
  const wrongPw = (await (await hook({ clientid: dev.deviceId, username: dev.deviceId, password: 'nope' })).json()) as { result: string }
  t.equal(wrongPw.result, 'deny')
  const ownTopic = (await (
    await hook({
      clientid: dev.deviceId,
      username: dev.deviceId,
      password: dev.password,
      topic: `devices/${dev.deviceId}/up/status`,
      action: 'publish',
    })
  ).json()) as { result: string }
  t.equal(ownTopic.result, 'allow')
  const other = (await (
    await hook({ clientid: dev.deviceId, username: dev.deviceId, password: dev.password, topic: 'devices/other/cmd', action: 'subscribe' })
  ).json()) as { result: string }
  t.equal(other.result, 'deny')
  const noSecret = await hook({ clientid: dev.deviceId }, 'wrong-secret-wrong-secret')
  t.equal(noSecret.status, 401)
  t.equal(((await noSecret.json()) as { code: string }).code, 'UNAUTHORIZED')

  // EMQX's authorization request has no password: it is answered for the identity the connection proved.
  const acl = async (body: object) => ((await (await hook(body)).json()) as { result: string }).result
  t.equal(
    await acl({ clientid: dev.deviceId, username: dev.deviceId, topic: `devices/${dev.deviceId}/up/ack`, action: 'publish' }),
    'allow',
    'a device publishes to its own up/ topics',
  )
  t.equal(
    await acl({ clientid: dev.deviceId, username: dev.deviceId, topic: `devices/${dev.deviceId}/#`, action: 'subscribe' }),
    'allow',
    'and subscribes to its own topics',
  )
  t.equal(
    await acl({ clientid: dev.deviceId, username: dev.deviceId, topic: 'devices/+/cmd', action: 'subscribe' }),
    'deny',
    'but not across devices',
  )
  t.equal(
    await acl({ clientid: 'other', username: dev.deviceId, topic: `devices/${dev.deviceId}/up/ack`, action: 'publish' }),
    'deny',
    'a client id that is not the device id',
  )

  // An app: authenticated with its session token first, then authorized by that session.
  const appId = `app-${dev.deviceId.slice(0, 8)}`
  t.equal(
    await acl({ clientid: appId, username: 'user', topic: `devices/${dev.deviceId}/state`, action: 'subscribe' }),
    'deny',
    'an app that never authenticated',
  )
  t.equal(
    ((await (await hook({ clientid: appId, username: 'user', password: token })).json()) as { result: string }).result,
    'allow',
    'the app authenticates',
  )
  t.equal(
    await acl({ clientid: appId, username: 'user', topic: `devices/${dev.deviceId}/state`, action: 'subscribe' }),
    'allow',
    "then watches its device's state",
  )
  t.equal(
    await acl({ clientid: appId, username: 'user', topic: `devices/${dev.deviceId}/cmd`, action: 'publish' }),
    'deny',
    'and publishes nothing',
  )
  const stranger2 = await signUp(makeClient(svc.url).client, uniqueEmail('ext-stranger'))
  const otherApp = 'app-stranger'
  await hook({ clientid: otherApp, username: 'user', password: stranger2.token })
  t.equal(
    await acl({ clientid: otherApp, username: 'user', topic: `devices/${dev.deviceId}/state`, action: 'subscribe' }),
    'deny',
    'another account may not watch it',
  )

  // Revocations count: a signed-out app and a disconnected device lose access.
  await appFetch(`${svc.url}/sign-out`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', origin: svc.url },
    body: '{}',
  })
  t.equal(
    await acl({ clientid: appId, username: 'user', topic: `devices/${dev.deviceId}/state`, action: 'subscribe' }),
    'deny',
    'after sign-out',
  )
})

t.test(
  'external broker mode: the outbox resends when a device reports a new session, and an up/ack with seq delivers',
  { skip: broker ? false : 'no Mosquitto on 127.0.0.1:1883' },
  async (t) => {
    const svc = await startApp(t, {
      env: { MQTT_EXTERNAL_URL: broker as string, MQTT_AUTH_SECRET: HOOK_SECRET, DEVICE_POLL_INTERVAL: '0' },
    })
    const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('ext-outbox'))
    const dev = await pairDevice(svc, token)
    const api = async <T>(method: string, path: string, body?: unknown) =>
      (await (
        await appFetch(`${svc.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body ? JSON.stringify(body) : undefined,
        })
      ).json()) as T
    // Sent while nobody on the broker subscribes: the broker forgets it, the outbox does not.
    const sent = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, { command: 'identify' })

    const device = await mqtt.connectAsync(broker as string, { clientId: `ext-${dev.deviceId}`, clean: true, reconnectPeriod: 0 })
    t.teardown(() => device.endAsync())
    await device.subscribeAsync(`devices/${dev.deviceId}/cmd`, { qos: 1 })
    const arrives = nextMessage<{ seq: number; commandId: string }>(device, `devices/${dev.deviceId}/cmd`)
    // Its first status after connecting: the broker had no session for it.
    await device.publishAsync(
      `devices/${dev.deviceId}/up/status`,
      JSON.stringify({ battery: 50, configVersion: 1, sessionPresent: false }),
      { qos: 1 },
    )
    const got = (await arrives).payload
    t.equal(got.commandId, sent.commandId, 'the command sent while nobody listened arrives after the device reports a new session')

    const status = async () =>
      (await api<{ messages: Array<{ seq: number; status: string }> }>('GET', `/api/device/${dev.deviceId}/downlink`)).messages.find(
        (m) => m.seq === got.seq,
      )?.status
    t.equal(await status(), 'pending', 'the broker’s PUBACK to the service says nothing about the device')
    await device.publishAsync(`devices/${dev.deviceId}/up/ack`, JSON.stringify({ seq: got.seq, commandId: got.commandId, ok: true }), {
      qos: 1,
    })
    await eventually(async () => (await status()) === 'delivered')
    t.pass('the device’s up/ack with the seq marks it delivered')
  },
)
