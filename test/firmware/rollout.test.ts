// Firmware updates end to end with simulated frames: an admin uploads a release, rolls it out to
// half the fleet, then to all of it; each device downloads, checks the digest and the Ed25519
// signature, installs, restarts and reports the new version, which is what counts as success.
import t from 'tap'
import type { SimDevice } from '../../device-sim/index.js'
import { bucketOf } from '../../src/firmware/rollout-rules.js'
import { manifestOf, verifyManifest } from '../../src/firmware/signing.js'
import { eventually } from '../helpers/mqtt.js'
import { api, firmwareWorld, frames, upload } from './helpers.js'

const FLEET = 16

t.test('a release rolled out to half a simulated fleet, then to all of it', async (t) => {
  const w = await firmwareWorld(t)
  const { svc, admin, owner } = w
  const fleet = await frames(t, w, FLEET, { model: 'frame-7' })
  const seen = new Map<SimDevice, string[]>()
  for (const d of fleet) {
    seen.set(d, [])
    d.on('ota', (o) => seen.get(d)!.push(`${o.version}:${o.state}`))
  }

  // Only admins manage firmware.
  t.equal((await upload(svc, owner, { model: 'frame-7', version: '1.1.0' })).status, 403, 'not for an ordinary account')
  t.equal((await fetch(`${svc.url}/api/admin/firmware`)).status, 401, 'nor for nobody')
  t.equal((await api(svc, owner, 'GET', '/api/admin/firmware-rollouts')).status, 403)

  const released = await upload(svc, admin, { model: 'frame-7', version: '1.1.0', notes: 'faster refresh' })
  t.equal(released.status, 201, JSON.stringify(released.body))
  const release = released.body
  t.match(release, { model: 'frame-7', version: '1.1.0', channel: 'stable', notes: 'faster refresh', counts: { offered: 0 } })
  t.match(release.sha256, /^[0-9a-f]{64}$/)
  const key = (await api(svc, owner, 'GET', '/api/firmware/public-key')).body
  t.equal(key.algorithm, 'Ed25519')
  t.ok(verifyManifest(key.publicKey, manifestOf(release), release.signature), 'the signature verifies with the published key')
  t.notOk(verifyManifest(key.publicKey, manifestOf({ ...release, version: '9.9.9' }), release.signature), 'and binds the version')

  const half = fleet.filter((d) => bucketOf(d.deviceId!) < 50)
  const rest = fleet.filter((d) => bucketOf(d.deviceId!) >= 50)
  t.ok(half.length > 0 && rest.length > 0, `the fleet spans both halves (${half.length}/${rest.length})`)

  const first = await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/frame-7/stable', { version: '1.1.0', percent: 50 })
  t.equal(first.status, 200, JSON.stringify(first.body))
  t.equal(first.body.offeredNow, half.length, 'offered to the devices whose bucket is under 50')
  await eventually(async () => half.every((d) => d.firmware === '1.1.0'), 60_000)
  const counted = await eventually(async () => {
    const r = (await api(svc, admin, 'GET', `/api/admin/firmware/${release.id}`)).body
    return r.counts.succeeded === half.length ? r : null
  }, 20_000)
  t.same(counted.counts, { offered: half.length, pending: 0, succeeded: half.length, failed: 0, withdrawn: 0 })
  t.same(
    counted.devices.map((d: { deviceId: string }) => d.deviceId).sort(),
    half.map((d) => d.deviceId).sort(),
    'the release lists each device it was offered to',
  )
  t.ok(
    rest.every((d) => d.firmware === '1.0.0' && seen.get(d)!.length === 0),
    'the other half was offered nothing',
  )
  // The service counts a success from the device's status report; the device reports its own
  // up/ota `succeeded` just after that report's PUBACK, so it may still be on its way.
  await eventually(async () => seen.get(half[0]!)!.length === 4, 20_000).catch(() => undefined)
  t.same(seen.get(half[0]!), ['1.1.0:downloading', '1.1.0:verifying', '1.1.0:installing', '1.1.0:succeeded'], 'every step reported')

  const second = await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/frame-7/stable', { version: '1.1.0', percent: 100 })
  t.equal(second.body.offeredNow, rest.length, '50 % → 100 % only adds devices')
  await eventually(async () => fleet.every((d) => d.firmware === '1.1.0'), 60_000)
  const all = await eventually(async () => {
    const r = (await api(svc, admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0]
    return r?.counts.succeeded === FLEET ? r : null
  }, 20_000)
  t.match(all, { model: 'frame-7', channel: 'stable', version: '1.1.0', percent: 100, paused: false, haltedAt: null })
  t.same(all.counts, { offered: FLEET, pending: 0, succeeded: FLEET, failed: 0, withdrawn: 0 })
  t.ok(
    half.every((d) => seen.get(d)!.filter((s) => s.endsWith(':downloading')).length === 1),
    'the first half was not offered it again',
  )

  // The owner sees what the device runs and how its update went, step by step, in its events.
  const mine = half[0]!
  const state = await api(svc, owner, 'GET', `/api/device/${mine.deviceId}/firmware`)
  t.match(state.body, {
    running: '1.1.0',
    model: 'frame-7',
    channel: 'stable',
    pinnedVersion: null,
    offer: { version: '1.1.0', state: 'succeeded' },
  })
  const events = (await api(svc, owner, 'GET', `/api/device/${mine.deviceId}/events?limit=100`)).body.events as Array<{
    type: string
    data: { state?: string }
  }>
  const steps = events
    .filter((e) => e.type.startsWith('firmware.'))
    .map((e) => (e.data.state ? `${e.type}:${e.data.state}` : e.type))
    .sort()
  t.same(
    steps,
    [
      'firmware.device_choice',
      'firmware.offered',
      'firmware.progress:downloading',
      'firmware.progress:installing',
      'firmware.progress:succeeded',
      'firmware.progress:verifying',
      'firmware.succeeded',
    ],
    'every step is an Event (and its enrollment in the fleet)',
  )
  // Another account sees nothing of it.
  t.equal((await api(svc, admin, 'GET', `/api/device/${mine.deviceId}/firmware`)).status, 404)
})
