import t from 'tap'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, nextMessage, subscribe } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

t.test('a paired device connects, gets a command, acks it, and presence is recorded', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail())
  const dev = await pairDevice(svc, token)
  const url = mqttUrl(svc)

  await t.rejects(connect(url, { clientId: dev.deviceId, username: dev.deviceId, password: 'wrong' }), /Bad username or password/i)

  const c = await connect(url, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
  t.equal(await subscribe(c, `devices/${dev.deviceId}/cmd`), 1)
  t.equal(await subscribe(c, `devices/+/cmd`).catch(() => 128), 128, 'wildcard over devices refused')

  const msg = nextMessage<{ commandId: string; command: string }>(c, `devices/${dev.deviceId}/cmd`)
  const res = await appFetch(`${svc.url}/api/device/${dev.deviceId}/command`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'identify' }),
  })
  t.equal(res.status, 202)
  const { commandId } = (await res.json()) as { commandId: string }
  const got = await msg
  t.equal(got.payload.commandId, commandId)
  t.equal(got.payload.command, 'identify')
  c.publish(`devices/${dev.deviceId}/up/ack`, JSON.stringify({ commandId, ok: true }), { qos: 1 })

  const events = await eventually(async () => {
    const r = await appFetch(`${svc.url}/api/device/${dev.deviceId}/events?limit=50`, { headers: { authorization: `Bearer ${token}` } })
    const body = (await r.json()) as { events: Array<{ type: string; data: Record<string, unknown> }> }
    return body.events.some((e) => e.type === 'device.ack') ? body.events : null
  })
  t.ok(events.some((e) => e.type === 'device.connected'))
  const ack = events.find((e) => e.type === 'device.ack')
  t.equal(ack?.data.matched, true)

  const detail = (await (
    await appFetch(`${svc.url}/api/device/${dev.deviceId}`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as { isActive: boolean }
  t.equal(detail.isActive, true)
  await close(c)
  await eventually(async () => {
    const d = (await (
      await appFetch(`${svc.url}/api/device/${dev.deviceId}`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as {
      isActive: boolean
    }
    return !d.isActive
  })
  const after = (await (
    await appFetch(`${svc.url}/api/device/${dev.deviceId}/events?limit=1`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as {
    events: Array<{ type: string; data: { reason: string } }>
  }
  t.equal(after.events[0]?.type, 'device.disconnected')
  t.equal(after.events[0]?.data.reason, 'client_disconnect')
})
