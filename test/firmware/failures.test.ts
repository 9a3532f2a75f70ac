// What must not install, and what stops a rollout: a changed image or signature is refused by the
// device and counted as failed (with the owner's alert); too many failures halt the rollout and
// take back offers not yet taken up; a pin may go down, a rollout never does; bad input is a 4xx.
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import t from 'tap'
import { newSigningKeyPem } from '../../src/firmware/signing.js'
import { firmwareRelease } from '../../src/firmware/tables.js'
import { startApp } from '../helpers/app.js'
import { pairDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { nextEvent } from '../device-sim/helpers.js'
import { api, enroll, firmwareWorld, frames, upload } from './helpers.js'
import { appFetch } from '../helpers/app-fetch.js'

type Counts = { offered: number; pending: number; succeeded: number; failed: number; withdrawn: number }

async function countsOf(w: Awaited<ReturnType<typeof firmwareWorld>>, releaseId: string): Promise<Counts> {
  return (await api(w.svc, w.admin, 'GET', `/api/admin/firmware/${releaseId}`)).body.counts
}

t.test('a changed image or signature is refused by the device and counted as failed', async (t) => {
  const w = await firmwareWorld(t)
  const [byBytes, bySignature] = await frames(t, w, 2, { model: 'frame-t' })
  const good = (await upload(w.svc, w.admin, { model: 'frame-t', version: '2.0.0' })).body
  const other = (await upload(w.svc, w.admin, { model: 'frame-t', version: '2.0.1' })).body

  // The stored image changes after it was signed (same size, one byte different).
  const dir = join(w.svc.dataDir, 'objects', 'firmware')
  const file = join(dir, (await readdir(dir)).find((f) => f.startsWith(good.id))!)
  const bytes = await readFile(file)
  bytes[10] = bytes[10]! ^ 0x01
  await writeFile(file, bytes)
  // The other release carries a signature that is not its own.
  await w.svc.app.database.db.update(firmwareRelease).set({ signature: good.signature }).where(eq(firmwareRelease.id, other.id))

  const failedBytes = nextEvent(byBytes!, 'ota', (o) => o.state === 'failed', 30_000)
  t.equal((await api(w.svc, w.admin, 'PUT', `/api/admin/devices/${byBytes!.deviceId}/firmware`, { pinnedVersion: '2.0.0' })).status, 200)
  t.match((await failedBytes).reason, /^verify: sha256 mismatch/)
  const failedSig = nextEvent(bySignature!, 'ota', (o) => o.state === 'failed', 30_000)
  await api(w.svc, w.admin, 'PUT', `/api/admin/devices/${bySignature!.deviceId}/firmware`, { pinnedVersion: '2.0.1' })
  t.equal((await failedSig).reason, 'verify: bad signature')

  // Pinning it again to the release it failed retries it (and it fails again: the image is still changed).
  const again = nextEvent(byBytes!, 'ota', (o) => o.state === 'failed', 30_000)
  t.match((await api(w.svc, w.admin, 'PUT', `/api/admin/devices/${byBytes!.deviceId}/firmware`, { pinnedVersion: '2.0.0' })).body, {
    offer: { state: 'offered' },
  })
  t.match((await again).reason, /^verify: sha256 mismatch/, 'a pin retries a failed release')
  t.equal(byBytes!.firmware, '1.0.0', 'neither installed')
  t.equal(bySignature!.firmware, '1.0.0')
  await eventually(async () => (await countsOf(w, good.id)).failed === 1 && (await countsOf(w, other.id)).failed === 1)
  t.same(await countsOf(w, good.id), { offered: 1, pending: 0, succeeded: 0, failed: 1, withdrawn: 0 })
  const state = (await api(w.svc, w.owner, 'GET', `/api/device/${byBytes!.deviceId}/firmware`)).body
  t.match(state, { running: '1.0.0', pinnedVersion: '2.0.0', offer: { version: '2.0.0', state: 'failed', reason: /sha256 mismatch/ } })
  const events = (await api(w.svc, w.owner, 'GET', `/api/device/${byBytes!.deviceId}/events?limit=100`)).body.events as Array<{
    type: string
    data: Record<string, unknown>
  }>
  t.ok(
    events.some((e) => e.type === 'device.alert' && e.data.kind === 'firmware-failed' && e.data.version === '2.0.0'),
    "the owner's alert is an Event",
  )
  t.ok(events.some((e) => e.type === 'firmware.failed'))
  // The owner can turn the alert off.
  const prefs = await api(w.svc, w.owner, 'PATCH', '/api/notifications/preferences', { firmwareFailed: false })
  t.match(prefs.body, { firmwareFailed: false, batteryLow: true })
})

t.test('too many failures halt the rollout and withdraw offers not yet taken up; a resume offers them again', async (t) => {
  const w = await firmwareWorld(t)
  const [dl, inst] = await Promise.all([
    frames(t, w, 1, { model: 'test-frame', prefix: 'dl', otaFail: 'download' }),
    frames(t, w, 1, { model: 'test-frame', prefix: 'inst', otaFail: 'install' }),
  ])
  // A device that takes its offer and never acts on it (asleep, say).
  const quiet = await pairDevice(w.svc, w.owner)
  await enroll(w.svc, w.admin, [quiet.deviceId])
  const c = await connect(mqttUrl(w.svc), { clientId: quiet.clientId, username: quiet.deviceId, password: quiet.password, clean: false })
  t.teardown(() => close(c))
  const offers: Array<{ version: string | null; seq?: number }> = []
  c.on('message', (topic, payload) => topic.endsWith('/ota') && offers.push(JSON.parse(payload.toString())))
  await subscribe(c, quiet.topics.ota!)
  c.publish(quiet.topics.status!, JSON.stringify({ battery: 80, firmware: '1.0.0', shownImageId: null, configVersion: 0 }), { qos: 1 })

  const release = (await upload(w.svc, w.admin, { model: 'test-frame', version: '1.2.0' })).body
  const failures = [nextEvent(dl[0]!, 'ota', (o) => o.state === 'failed'), nextEvent(inst[0]!, 'ota', (o) => o.state === 'failed')]
  const set = await api(w.svc, w.admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', {
    version: '1.2.0',
    percent: 100,
    minAttempts: 2,
    maxFailureShare: 0.5,
  })
  t.equal(set.body.offeredNow, 3)
  t.match((await failures[0])!.reason, /^download: simulated/)
  t.match((await failures[1])!.reason, /^install: simulated/)

  const halted = await eventually(async () => {
    const r = (await api(w.svc, w.admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0]
    return r?.haltedAt ? r : null
  })
  t.same(halted.counts, { offered: 3, pending: 0, succeeded: 0, failed: 2, withdrawn: 1 }, 'the untaken offer was withdrawn')
  await eventually(async () => offers.at(-1)?.version === null)
  t.match(offers[0], { version: '1.2.0' }, 'the quiet device had the offer')
  t.same(offers.at(-1), { seq: offers.at(-1)!.seq, version: null }, 'and then its withdrawal (retained)')
  t.equal(dl[0]!.firmware, '1.0.0')
  t.equal(inst[0]!.firmware, '1.0.0')

  // A new status does not bring the offer back while halted.
  c.publish(quiet.topics.status!, JSON.stringify({ battery: 80, firmware: '1.0.0', shownImageId: null, configVersion: 0 }), { qos: 1 })
  await new Promise((r) => setTimeout(r, 300))
  t.equal(offers.at(-1)?.version, null)

  const resumed = await api(w.svc, w.admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', {
    version: '1.2.0',
    percent: 100,
    paused: false,
  })
  t.equal(resumed.body.haltedAt, null, 'a resume lifts the halt')
  t.equal(resumed.body.offeredNow, 1, 'and offers again what was withdrawn, not what failed')
  await eventually(async () => offers.at(-1)?.version === '1.2.0')
  t.match(await countsOf(w, release.id), { failed: 2, pending: 1, withdrawn: 0 })

  // Counting starts afresh from the resume: one new failure is below minAttempts, so no halt.
  c.publish(quiet.topics.otaProgress!, JSON.stringify({ version: '1.2.0', state: 'failed', reason: 'flash write error' }), { qos: 1 })
  await eventually(async () => (await countsOf(w, release.id)).failed === 3)
  await new Promise((r) => setTimeout(r, 200))
  t.equal(
    (await api(w.svc, w.admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0].haltedAt,
    null,
    'the failures before the resume do not count',
  )

  // Paused: nothing new is offered, even to a device that reports.
  const paused = await api(w.svc, w.admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', {
    version: '1.2.0',
    percent: 100,
    paused: true,
  })
  t.match(paused.body, { paused: true, offeredNow: 0 })
})

t.test('a pin may go down; a rollout never offers an older version', async (t) => {
  const w = await firmwareWorld(t)
  const dev = await pairDevice(w.svc, w.owner)
  await enroll(w.svc, w.admin, [dev.deviceId])
  const c = await connect(mqttUrl(w.svc), { clientId: dev.clientId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(c))
  const offers: Array<{ version: string | null; url?: string; sha256?: string }> = []
  c.on('message', (topic, payload) => topic.endsWith('/ota') && offers.push(JSON.parse(payload.toString())))
  await subscribe(c, dev.topics.ota!)
  const status = (firmware: string) =>
    c.publish(dev.topics.status!, JSON.stringify({ battery: 80, firmware, shownImageId: null, configVersion: 0 }), { qos: 1 })
  status('2.0.0')
  await eventually(async () => (await api(w.svc, w.owner, 'GET', `/api/device/${dev.deviceId}/firmware`)).body.running === '2.0.0')

  const old = (await upload(w.svc, w.admin, { model: 'test-frame', version: '1.5.0' })).body
  const set = await api(w.svc, w.admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', { version: '1.5.0', percent: 100 })
  t.equal(set.body.offeredNow, 0, 'a device on 2.0.0 is not offered 1.5.0')
  status('2.0.0')
  await new Promise((r) => setTimeout(r, 300))
  t.same(offers, [], 'not on its next status either')

  const pinned = await api(w.svc, w.admin, 'PUT', `/api/admin/devices/${dev.deviceId}/firmware`, { pinnedVersion: '1.5.0' })
  t.match(pinned.body, { pinnedVersion: '1.5.0', offer: { version: '1.5.0', state: 'offered' } })
  await eventually(async () => offers.length === 1)
  t.match(offers[0], { version: '1.5.0', sha256: old.sha256, size: old.size, signature: old.signature, releaseId: old.id })

  // The offer's link downloads the image; the device can get a fresh link with its secret.
  const image = Buffer.from(await (await appFetch(offers[0]!.url!)).arrayBuffer())
  t.equal(image.length, old.size)
  const fresh = await appFetch(`${w.svc.url}/api/device/${dev.deviceId}/firmware/offer`, {
    headers: { authorization: `Bearer ${dev.password}` },
  })
  t.equal(fresh.status, 200)
  t.match(await fresh.json(), { version: '1.5.0', url: /^http/ })
  const wrong = await appFetch(`${w.svc.url}/api/device/${dev.deviceId}/firmware/offer`, { headers: { authorization: 'Bearer nope' } })
  t.equal(wrong.status, 401)

  // Installed: the next status reports it, which is the success.
  c.publish(dev.topics.otaProgress!, JSON.stringify({ version: '1.5.0', state: 'installing' }), { qos: 1 })
  status('1.5.0')
  await eventually(async () => (await countsOf(w, old.id)).succeeded === 1)

  // The attempt ended: the retained offer is cleared, so a device without memory does not retry it.
  await eventually(async () => offers.at(-1)?.version === null)
  // Unpinned, the rollout's target is what it runs: nothing more is offered.
  const unpinned = await api(w.svc, w.admin, 'PUT', `/api/admin/devices/${dev.deviceId}/firmware`, { pinnedVersion: null })
  t.match(unpinned.body, { pinnedVersion: null, running: '1.5.0' })
  t.same(
    offers.map((o) => o.version),
    ['1.5.0', null],
  )

  // Progress for a version never offered is not recorded.
  c.publish(dev.topics.otaProgress!, JSON.stringify({ version: '9.0.0', state: 'failed' }), { qos: 1 })
  await new Promise((r) => setTimeout(r, 200))
  t.equal((await countsOf(w, old.id)).failed, 0)
})

t.test('bad input is refused with a 4xx naming what is wrong', async (t) => {
  const w = await firmwareWorld(t, { FIRMWARE_MAX_BYTES: '8192' })
  const { svc, admin } = w
  t.match(await upload(svc, admin, { model: 'm', version: 'v1' }), {
    status: 400,
    body: { code: 'VALIDATION_ERROR', message: /semantic version/ },
  })
  t.match(await upload(svc, admin, { model: 'm', version: '1.2.0+build.7' }), { status: 400, body: { message: /no build metadata/ } })
  t.match(await upload(svc, admin, { model: 'm', version: `1.0.0-${'a'.repeat(60)}` }, Buffer.from('small')), {
    status: 400,
    body: { message: /at most 50/ },
  })
  t.match(await upload(svc, admin, { model: 'm', version: '1.0.0', notes: 'é'.repeat(9000) }), { status: 400, body: { message: /notes/ } })
  t.match(await upload(svc, admin, { model: 'has space', version: '1.0.0' }), { status: 400, body: { message: /model/ } })
  t.match(await upload(svc, admin, { model: 'm', version: '1.0.0', channel: 'nightly' }), { status: 400, body: { message: /channel/ } })
  t.match(await upload(svc, admin, { model: 'm', version: '1.0.0' }, Buffer.alloc(0)), { status: 400, body: { message: /empty/ } })
  const first = await upload(svc, admin, { model: 'm', version: '1.0.0' })
  t.equal(first.status, 201)
  t.match(await upload(svc, admin, { model: 'm', version: '1.0.0' }), { status: 409, body: { code: 'FIRMWARE_VERSION_EXISTS' } })
  const beta = await upload(svc, admin, { model: 'm', version: '1.1.0-beta.1', channel: 'beta' })
  t.equal(beta.status, 201)
  t.match(await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/m/stable', { version: '1.1.0-beta.1', percent: 10 }), {
    status: 409,
    body: { code: 'FIRMWARE_CHANNEL_MISMATCH' },
  })
  t.equal((await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/m/beta', { version: '1.1.0-beta.1', percent: 10 })).status, 200)
  t.match(await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/m/stable', { version: '3.0.0', percent: 10 }), {
    status: 404,
    body: { code: 'FIRMWARE_NOT_FOUND' },
  })
  t.equal((await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/m/stable', { version: '1.0.0', percent: 101 })).status, 400)
  t.equal((await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/m/weekly', { version: '1.0.0', percent: 1 })).status, 400)
  t.match(await api(svc, admin, 'DELETE', `/api/admin/firmware/${beta.body.id}`), { status: 409, body: { code: 'FIRMWARE_IN_USE' } })
  t.equal((await api(svc, admin, 'DELETE', `/api/admin/firmware/${first.body.id}`)).status, 204, 'an unused release can go')
  t.equal((await api(svc, admin, 'GET', `/api/admin/firmware/${first.body.id}`)).status, 404)
  const dev = await pairDevice(svc, w.owner)
  t.match(
    await api(svc, admin, 'PUT', `/api/admin/devices/${dev.deviceId}/firmware`, { pinnedVersion: '1.1.0-beta.1' }),
    {
      status: 404,
      body: { message: /test-frame has no release/ },
    },
    "a pin must be a release of the device's own model",
  )
  t.equal((await api(svc, admin, 'PUT', `/api/admin/devices/${dev.deviceId}/firmware`, {})).status, 400)
  t.equal((await api(svc, admin, 'PUT', '/api/admin/devices/nope/firmware', { channel: 'beta' })).status, 404)
  const big = await upload(svc, admin, { model: 'm', version: '5.0.0' }, Buffer.alloc(8193))
  t.equal(big.status, 413, 'past FIRMWARE_MAX_BYTES')
  t.equal(
    (await api(svc, w.owner, 'GET', `/api/device/${dev.deviceId}/firmware/offer`)).status,
    401,
    "the offer route wants the device's secret",
  )
})

t.test('a service that comes back with another signing key refuses to start', async (t) => {
  const first = await startApp(t)
  const reuse = { dataDir: first.dataDir, databaseUrl: first.config.databaseUrl, redisPrefix: first.config.redisPrefix }
  await first.close()
  await t.rejects(
    startApp(t, { env: { FIRMWARE_SIGNING_KEY: newSigningKeyPem() }, reuse }),
    // With Redis the node that just stopped is still registered: the cluster check answers first.
    { name: 'ConfigError', message: /devices of this database trust another firmware key|signs firmware with another key/ },
    'a lost key file or a wrong FIRMWARE_SIGNING_KEY is refused, not used',
  )
  const again = await startApp(t, { reuse })
  t.equal((await appFetch(`${again.url}/ok`)).status, 200, 'with its own key it starts')
})
