// A device may subscribe to devices/{own}/#: the filter is granted, and each message is checked on
// delivery as Mosquitto does, so the device gets what it could subscribe to by name (its downlink,
// its state) and not its own presence events (with remote addresses and user ids) or uplink.
import t from 'tap'
import mqtt from 'mqtt'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

t.test('devices/{own}/# is granted and delivers only what the device may subscribe to by name', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('wildcard'))
  const dev = await pairDevice(svc, token)
  const opts = {
    clientId: dev.deviceId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
    reconnectPeriod: 0,
    protocolVersion: 4 as const,
  }
  const first = mqtt.connect(mqttUrl(svc), opts)
  const seen: string[] = []
  first.on('message', (topic) => seen.push(topic))
  await new Promise((resolve) => first.once('connect', resolve))
  t.equal(await subscribe(first, `devices/${dev.deviceId}/#`, 1), 1, 'granted')
  // Its own uplink, which the filter matches too.
  await first.publishAsync(dev.topics.status!, JSON.stringify({ battery: 80 }), { qos: 1 })
  await close(first)

  // Its disconnect (queued while away) and its new connect are events on devices/{id}/events.
  const again = mqtt.connect(mqttUrl(svc), opts)
  again.on('message', (topic) => seen.push(topic))
  await new Promise((resolve) => again.once('connect', resolve))
  t.teardown(() => again.end(true))
  const res = await appFetch(`${svc.url}/api/prompts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'through the wildcard', deviceId: dev.deviceId }),
  })
  t.equal(res.status, 201)
  await eventually(async () => seen.includes(dev.topics.prompt!))
  const events = await (
    await appFetch(`${svc.url}/api/device/${dev.deviceId}/events?limit=10`, { headers: { authorization: `Bearer ${token}` } })
  ).json()
  t.ok(
    (events as { events: Array<{ type: string }> }).events.some((e) => e.type === 'device.connected'),
    'events were published meanwhile',
  )
  await new Promise((r) => setTimeout(r, 300))
  t.notOk(
    seen.some((topic) => topic.endsWith('/events') || topic.includes('/up/')),
    `no events, no uplink delivered to the device (got ${[...new Set(seen)].join(', ')})`,
  )
  t.ok(seen.includes(dev.topics.config!), 'its config arrives through the wildcard')
})
