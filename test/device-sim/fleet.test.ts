// Fleet mode: 50 simulated devices in one process pair through a claim token and all connect;
// each is a separate device of the account, online, with its own state file. And the
// development auto-approve switch pairs a fleet with nobody claiming anything.
import t from 'tap'
import { readdir } from 'node:fs/promises'
import { Fleet, loadState, resolveProfile, type FleetStats } from '../../device-sim/index.js'
import { loadConfig, ConfigError } from '../../src/config.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually, mqttUrl } from '../helpers/mqtt.js'
import { call, nextEvent, tempDir, type DeviceDetail } from './helpers.js'
import { join } from 'node:path'
import { appFetch } from '../helpers/app-fetch.js'

const COUNT = 50

t.test(`fleet mode pairs and connects ${COUNT} devices`, async (t) => {
  // 50 connects from one address in a few seconds: above the broker's default per-address rate.
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', MQTT_CONNECT_RATE: '1000' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('fleet'))
  const dir = await tempDir(t)
  const stateDir = join(dir, 'fleet')
  const fleet = new Fleet({
    server: svc.url,
    name: 'bench',
    count: COUNT,
    stateDir,
    display: resolveProfile('bw-800x480'),
    claimToken: token,
    mqttUrl: mqttUrl(svc),
    concurrency: 10,
  })
  t.teardown(() => fleet.stop())
  const progress: FleetStats[] = []
  fleet.on('progress', (s) => progress.push(s))
  const warnings: string[] = []
  for (const d of fleet.devices) d.on('warning', (w) => warnings.push(`${d.name}: ${w.message}`))
  // A fleet that stalls fails here with what its devices said, not at the file's timeout.
  let stalled: NodeJS.Timeout | undefined
  await Promise.race([
    fleet.start(),
    new Promise((_, reject) => {
      stalled = setTimeout(
        () => reject(new Error(`the fleet did not come up in 120 s: ${JSON.stringify(fleet.stats())}\n${warnings.slice(-20).join('\n')}`)),
        120_000,
      )
    }),
  ]).finally(() => clearTimeout(stalled))

  const stats = fleet.stats()
  t.equal(stats.total, COUNT)
  t.equal(stats.paired, COUNT, 'every device paired')
  t.equal(stats.connected, COUNT, 'every device is connected')
  t.equal(stats.errors, 0)
  t.ok(
    progress.some((p) => p.connected > 0 && p.connected < COUNT),
    'progress was reported along the way',
  )
  t.equal(progress.at(-1)?.connected, COUNT)

  const ids = fleet.devices.map((d) => d.deviceId)
  t.equal(new Set(ids).size, COUNT, 'as distinct devices')
  // Saves in flight show as *.tmp files until their rename.
  const files = (await readdir(stateDir)).filter((f) => f.endsWith('.json')).sort()
  t.same(files, Array.from({ length: COUNT }, (_, i) => `bench-${i + 1}.json`).sort(), 'each with its own state file')
  t.equal((await loadState(join(stateDir, 'bench-7.json')))?.credentials?.username, fleet.devices[6]!.deviceId)

  const listed = await eventually(async () => {
    const { body } = await call<{ devices: DeviceDetail[] }>(svc, 'GET', '/api/device', token)
    return body.devices.length === COUNT && body.devices.every((d) => d.isActive) ? body.devices : null
  }, 20_000)
  t.same(
    listed.map((d) => d.name).sort(),
    Array.from({ length: COUNT }, (_, i) => `bench-${i + 1}`).sort(),
    'the account has all of them, online, named by the fleet',
  )

  // A command to one device of the fleet reaches that device only.
  const target = fleet.devices[11]!
  const identified = nextEvent(target, 'identify')
  const others: string[] = []
  for (const d of fleet.devices) if (d !== target) d.on('command', () => others.push(d.name))
  t.equal((await call(svc, 'POST', `/api/device/${target.deviceId}/command`, token, { command: 'identify' })).status, 202)
  t.equal((await identified).deviceId, target.deviceId)
  t.same(others, [], 'no other device got it')
  t.equal(fleet.stats().commands, 1)
})

t.test('the development auto-approve switch pairs a fleet without anyone claiming it', async (t) => {
  const email = uniqueEmail('auto')
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', DEVICE_AUTO_APPROVE_USER_EMAIL: email } })
  const { token } = await signUp(makeClient(svc.url).client, email)
  const dir = await tempDir(t)
  const fleet = new Fleet({
    server: svc.url,
    name: 'auto',
    count: 3,
    stateDir: join(dir, 'auto'),
    display: resolveProfile('acep7'),
    mqttUrl: mqttUrl(svc),
  })
  t.teardown(() => fleet.stop())
  await fleet.start()
  t.equal(fleet.stats().connected, 3, 'all three paired and connected with no claim')
  const { body } = await call<{ devices: DeviceDetail[] }>(svc, 'GET', '/api/device', token)
  t.same(body.devices.map((d) => d.id).sort(), fleet.devices.map((d) => d.deviceId).sort(), 'they belong to the configured account')

  // Someone else's init is claimed for that account too: that is why it is development only.
  const refused = (() => {
    try {
      loadConfig({ DATA_DIR: dir, DEVICE_AUTO_APPROVE_USER_EMAIL: email, NODE_ENV: 'production' })
    } catch (err) {
      return err
    }
  })()
  t.type(refused, ConfigError, 'it is refused when NODE_ENV=production')
  t.match((refused as Error).message, /DEVICE_AUTO_APPROVE_USER_EMAIL is for development only/)
  t.throws(
    () => loadConfig({ DATA_DIR: dir, DEVICE_AUTO_APPROVE_USER_EMAIL: 'not an email' }),
    ConfigError,
    'and must be an e-mail address',
  )
})

t.test('without the switch a new device waits to be claimed', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const init = (await (
    await appFetch(`${svc.url}/api/device/init`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ display: { width: 800, height: 480, palette: 'bw' } }),
    })
  ).json()) as { deviceId: string; deviceCode: string }
  const rec = (await (
    await appFetch(`${svc.url}/api/device/get-init-device`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ deviceId: init.deviceId, deviceCode: init.deviceCode }),
    })
  ).json()) as { status: string; credentials?: unknown }
  t.equal(rec.status, 'pending')
  t.notOk(rec.credentials)
})
