// The simulator's state across restarts: a restarted simulator connects with the credentials in
// its state file (no new pairing, same persistent session); once the owner revokes them the
// broker refuses them, the simulator deletes them and pairs again as a new device. One
// restarted while pairing keeps polling the same code, and backs off when the service says
// SLOW_DOWN.
import t from 'tap'
import { ServiceApi, SimDevice, loadState, resolveProfile, type PairingInfo, type SimDeviceOptions } from '../../device-sim/index.js'
import { freshState, saveState } from '../../device-sim/state.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually, mqttUrl } from '../helpers/mqtt.js'
import { call, nextEvent, tempDir, type DeviceDetail, type EventRecord } from './helpers.js'
import { join } from 'node:path'

t.test('a restarted simulator reuses its credentials; revoked ones make it pair again', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('sim-creds'))
  const dir = await tempDir(t)
  const opts: SimDeviceOptions = {
    server: svc.url,
    name: 'hall',
    display: resolveProfile('gray4'),
    statePath: join(dir, 'hall.json'),
    mqttUrl: mqttUrl(svc),
    reconnectMinMs: 100,
    reconnectMaxMs: 500,
  }

  const first = new SimDevice(opts)
  t.teardown(() => first.stop())
  const shown = nextEvent(first, 'pairing')
  const online = first.start()
  const pairing = await shown
  t.equal((await call(svc, 'POST', '/api/device/validate', token, { pinCode: pairing.pinCode, name: 'Hall' })).status, 200)
  await online
  const deviceId = pairing.deviceId
  t.equal(first.deviceId, deviceId)
  await first.stop()
  t.notOk(first.connected, 'the first run disconnected')

  // Restart: same state file; this time over MQTT-over-WebSocket, at the URL the credentials carry.
  const second = new SimDevice({ ...opts, mqttUrl: undefined, transport: 'ws' })
  t.teardown(() => second.stop())
  const pairings: PairingInfo[] = []
  second.on('pairing', (p) => pairings.push(p))
  const resumed = nextEvent(second, 'resumed')
  const connected = nextEvent(second, 'connected')
  await second.start()
  t.equal((await resumed).deviceId, deviceId, 'it resumes with the saved device id')
  const resumedConnection = await connected
  t.equal(resumedConnection.url, `${svc.url.replace('http', 'ws')}/mqtt`, 'over WebSocket')
  t.equal(resumedConnection.sessionPresent, true, 'and finds its persistent session on the broker')
  t.same(pairings, [], 'without pairing again')
  t.equal(second.deviceId, deviceId)
  const devices = await call<{ devices: DeviceDetail[] }>(svc, 'GET', '/api/device', token)
  t.same(
    devices.body.devices.map((d) => d.id),
    [deviceId],
    'the account still has exactly one device',
  )
  // Presence events are written just after the connection: wait for the second one.
  const log = await eventually(async () => {
    const { body } = await call<{ events: EventRecord[] }>(svc, 'GET', `/api/device/${deviceId}/events?limit=100`, token)
    return body.events.filter((e) => e.type === 'device.connected').length >= 2 ? body.events : null
  })
  t.equal(log.filter((e) => e.type === 'device.credentials_issued').length, 1, 'credentials were issued once, used for both connections')

  // The owner revokes them: the broker refuses (CONNACK 5) and the simulator pairs again.
  const revoked = nextEvent(second, 'revoked')
  const again = nextEvent(second, 'pairing')
  const disconnect = await call<{ kicked: boolean }>(svc, 'POST', '/api/device/disconnect', token, { deviceId })
  t.equal(disconnect.status, 200)
  t.equal(disconnect.body.kicked, true, 'its live session was ended')
  const refusal = await revoked
  t.equal(refusal.returnCode, 5, 'the broker refused the revoked credentials with CONNACK 5')
  t.equal(refusal.deviceId, deviceId)
  const repairing = await again
  t.not(repairing.deviceId, deviceId, 'it starts a new pairing as a new device')
  t.not(repairing.pinCode, pairing.pinCode)
  const midway = await loadState(opts.statePath)
  t.notOk(midway?.credentials, 'the refused credentials are gone from the state file')
  t.equal(midway?.pairing?.deviceId, repairing.deviceId, 'the new pairing is saved')

  const reconnected = nextEvent(second, 'connected', (c) => c.deviceId === repairing.deviceId)
  t.equal((await call(svc, 'POST', '/api/device/validate', token, { pinCode: repairing.pinCode, name: 'Hall again' })).status, 200)
  t.equal((await reconnected).sessionPresent, false, 'the new device starts a new session')
  t.equal(second.deviceId, repairing.deviceId)
  t.equal((await loadState(opts.statePath))?.credentials?.username, repairing.deviceId, 'the new credentials are saved')
  const active = await eventually(async () => {
    const d = await call<DeviceDetail>(svc, 'GET', `/api/device/${repairing.deviceId}`, token)
    return d.body.isActive ? d.body : null
  })
  t.equal(active.name, 'Hall again')
  const old = await call<DeviceDetail>(svc, 'GET', `/api/device/${deviceId}`, token)
  t.equal(old.body.isActive, false, 'the revoked device stays offline')
})

t.test('a simulator restarted while pairing keeps its code, and slows down when told to', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '2' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('sim-slow'))
  const dir = await tempDir(t)
  const display = resolveProfile('bw-800x480')
  // A pairing the simulator started before it was stopped, saved with a stale interval of 0,
  // and polled just now (by the earlier run, say): its first poll comes too soon.
  const api = new ServiceApi(svc.url)
  const init = await api.init(display, { model: 'display-sim' })
  t.equal((await api.poll(init.deviceId, init.deviceCode)).status, 'pending')
  const statePath = join(dir, 'attic.json')
  await saveState(statePath, {
    ...freshState(svc.url, 'attic', display),
    pairing: {
      deviceId: init.deviceId,
      deviceCode: init.deviceCode,
      pinCode: init.pinCode,
      userCode: init.userCode,
      verificationUri: init.verification_uri,
      verificationUriComplete: init.verification_uri_complete,
      expiresAt: init.expires_at,
      interval: 0,
    },
  })

  const sim = new SimDevice({ server: svc.url, name: 'attic', display, statePath, mqttUrl: mqttUrl(svc) })
  t.teardown(() => sim.stop())
  const shown = nextEvent(sim, 'pairing')
  const slowed = nextEvent(sim, 'slow-down')
  const online = sim.start()
  const pairing = await shown
  t.equal(pairing.resumed, true, 'it resumes the saved pairing')
  t.equal(pairing.pinCode, init.pinCode, 'and shows the same code')
  t.equal((await slowed).interval, 5, 'SLOW_DOWN adds 5 s to its polling interval (RFC 8628)')
  t.equal((await call(svc, 'POST', '/api/device/validate', token, { pinCode: init.pinCode, name: 'Attic' })).status, 200)
  await online
  t.equal(sim.deviceId, init.deviceId, 'it paired as the device it started as')
})
