// Device health alerts from status reports, with the service's clock moved by the test: battery
// low with hysteresis (under 15 %, again only after above 25 %), and a device silent for three of
// its report intervals (once, cleared by its next report, never while its day plan has it asleep).
// Each alert is an Event; the owner's preferences have a switch for each.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl } from '../helpers/mqtt.js'

let now = Date.parse('2026-06-01T12:00:00Z')
const clock = () => new Date(now)

async function alerts(svc: TestApp, token: string, deviceId: string) {
  const events = (await jsonCall(svc.url, `/api/device/${deviceId}/events?limit=100`, { token })).body.events as Array<{
    type: string
    data: Record<string, unknown>
  }>
  return events.filter((e) => e.type === 'device.alert').map((e) => e.data)
}

/** Publishes a status report and waits until the service has applied it. */
async function report(svc: TestApp, c: MqttClient, deviceId: string, body: Record<string, unknown>) {
  const before = (await svc.app.database.db.query.deviceHealth.findFirst({ where: (h, { eq }) => eq(h.deviceId, deviceId) }))?.lastReportAt
  now += 1000
  c.publish(`devices/${deviceId}/up/status`, JSON.stringify({ firmware: '1.0', shownImageId: null, configVersion: 1, ...body }), { qos: 1 })
  await eventually(async () => {
    const h = await svc.app.database.db.query.deviceHealth.findFirst({ where: (h, { eq }) => eq(h.deviceId, deviceId) })
    return h && h.lastReportAt.getTime() !== before?.getTime()
  })
}

t.test('battery low with hysteresis, and a silent device, each alerted once', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('health'))
  const dev = await pairDevice(svc, token)
  const c = await connect(mqttUrl(svc), { clientId: dev.clientId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(c))

  for (const battery of [40, 20, 14, 12, 20, 14]) await report(svc, c, dev.deviceId, { battery, interval: 60.4 })
  t.same(
    await alerts(svc, token, dev.deviceId),
    [{ kind: 'battery-low', battery: 14 }],
    'once under 15 %; not again before it was above 25 %',
  )
  for (const battery of [26, 13]) await report(svc, c, dev.deviceId, { battery, interval: 60 })
  t.same(
    (await alerts(svc, token, dev.deviceId)).map((a) => a.battery),
    [13, 14],
    'above 25 % re-arms it: a second alert at 13 %',
  )

  // Three intervals (60 s) without a report: silent, once.
  now += 179_000
  t.equal(await svc.app.health!.sweep(), 0, 'not yet at 179 s')
  now += 2000
  t.equal(await svc.app.health!.sweep(), 1, 'silent after three intervals')
  t.equal(await svc.app.health!.sweep(), 0, 'and alerted once')
  t.match((await alerts(svc, token, dev.deviceId))[0], { kind: 'silent' })
  // Heard from again: the alert is cleared and can be raised again later.
  await report(svc, c, dev.deviceId, { battery: 50, interval: 60 })
  now += 200_000
  t.equal(await svc.app.health!.sweep(), 1, 'silent again after its next report and three more intervals')

  // The switches are the owner's notification preferences.
  const prefs = await jsonCall(svc.url, '/api/notifications/preferences', { token })
  t.match(prefs.body, { batteryLow: true, deviceSilent: true })
  const off = await jsonCall(svc.url, '/api/notifications/preferences', { token, method: 'PATCH', body: { batteryLow: false } })
  t.match(off.body, { batteryLow: false, deviceSilent: true })
})

t.test('a device asleep by its day plan is not silent', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('health-sleep'))
  const dev = await pairDevice(svc, token)
  const c = await connect(mqttUrl(svc), { clientId: dev.clientId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(c))
  now = Date.parse('2026-06-02T21:50:00Z')
  await report(svc, c, dev.deviceId, { battery: 80, interval: 60 })
  const put = await jsonCall(svc.url, `/api/device/${dev.deviceId}/schedule`, {
    token,
    method: 'PUT',
    body: { timeZone: 'UTC', rules: [], sleep: [{ from: '22:00', to: '06:00' }] },
  })
  t.equal(put.status, 200)
  now = Date.parse('2026-06-02T22:00:00Z')
  await svc.app.scheduler!.tick()
  now = Date.parse('2026-06-03T03:00:00Z')
  t.equal(await svc.app.health!.sweep(), 0, 'asleep until 06:00: not silent')
  now = Date.parse('2026-06-03T06:30:00Z')
  await svc.app.scheduler!.tick()
  now = Date.parse('2026-06-03T06:31:00Z')
  t.equal(await svc.app.health!.sweep(), 0, 'just woken: silence counts from the wake-up, not from the last report')
  now = Date.parse('2026-06-03T06:34:00Z')
  t.equal(await svc.app.health!.sweep(), 1, 'three intervals after waking and still quiet: silent')
})
