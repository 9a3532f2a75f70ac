// A model and a version a device declares are its own word (issue 30.1): a plain user who pairs
// six devices claiming a model is offered none of its releases, gets no download link, and cannot
// halt its rollout by reporting failures; the fleet an admin enrolled still gets the release,
// installs it, and its own failures still halt the rollout.
import t from 'tap'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { api, enroll, firmwareWorld, frames, upload } from './helpers.js'
import { appFetch } from '../helpers/app-fetch.js'

type Offer = { seq: number; version: string | null; url?: string }

t.test("six devices a plain user declares as a model neither get its release nor halt its rollout; the admin's fleet does", async (t) => {
  const w = await firmwareWorld(t)
  const { svc, admin, owner } = w
  const { token: attacker } = await signUp(makeClient(svc.url).client, uniqueEmail('fw-attacker'))

  // The fleet: one frame that installs, and five that take their offer and wait (asleep, say).
  const [installer] = await frames(t, w, 1, { model: 'test-frame' })
  const quiet: PairedDevice[] = []
  for (let i = 0; i < 5; i++) quiet.push(await pairDevice(svc, owner, { name: `Fleet ${i}` }))
  await enroll(
    svc,
    admin,
    quiet.map((d) => d.deviceId),
  )
  // The attacker's six, declaring the same model and an old version (pairDevice: test-frame 1.0.0).
  const fakes: PairedDevice[] = []
  for (let i = 0; i < 6; i++) fakes.push(await pairDevice(svc, attacker, { name: `Fake ${i}` }))

  const offers = new Map<string, Offer[]>()
  const clients = await Promise.all(
    [...quiet, ...fakes].map(async (d) => {
      const got: Offer[] = []
      offers.set(d.deviceId, got)
      const c = await connect(mqttUrl(svc), { clientId: d.clientId, username: d.deviceId, password: d.password, clean: false })
      t.teardown(() => close(c))
      c.on('message', (topic, payload) => topic === d.topics.ota && got.push(JSON.parse(payload.toString())))
      await subscribe(c, d.topics.ota!)
      return { d, c }
    }),
  )
  const status = { battery: 80, firmware: '1.0.0', shownImageId: null, configVersion: 0 }
  for (const { d, c } of clients) c.publish(d.topics.status!, JSON.stringify(status), { qos: 1 })

  const release = (await upload(svc, admin, { model: 'test-frame', version: '1.1.0' })).body
  const put = await api(svc, admin, 'PUT', '/api/admin/firmware-rollouts/test-frame/stable', { version: '1.1.0', percent: 100 })
  t.equal(put.status, 200)
  t.equal(put.body.offeredNow, 1 + quiet.length, 'offered to the enrolled fleet only')
  await eventually(async () => quiet.every((d) => offers.get(d.deviceId)!.some((o) => o.version === '1.1.0')))
  await eventually(async () => installer!.firmware === '1.1.0', 30_000)
  t.pass('the enrolled frame installed it')

  // The attack: every fake reports the release failed, and asks for a download link.
  for (const { d, c } of clients.filter(({ d }) => fakes.includes(d))) {
    c.publish(d.topics.otaProgress!, JSON.stringify({ version: '1.1.0', state: 'failed', reason: 'bricked' }), { qos: 1 })
    c.publish(d.topics.status!, JSON.stringify(status), { qos: 1 })
  }
  for (const d of fakes) {
    const res = await appFetch(`${svc.url}/api/device/${d.deviceId}/firmware/offer`, { headers: { authorization: `Bearer ${d.password}` } })
    t.equal(res.status, 404, 'no download link for a device nobody enrolled')
  }
  await new Promise((r) => setTimeout(r, 500))
  const after = (await api(svc, admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0]
  t.equal(after.haltedAt, null, 'the rollout is not halted')
  t.match(after.counts, { offered: 1 + quiet.length, failed: 0, withdrawn: 0 })
  t.ok(
    fakes.every((d) => offers.get(d.deviceId)!.every((o) => !o.url)),
    'no fake device was handed an offer or a link',
  )
  const mine = (await api(svc, attacker, 'GET', `/api/device/${fakes[0]!.deviceId}/firmware`)).body
  t.match(mine, { fleet: false, offer: null })
  t.ok(
    quiet.every((d) => offers.get(d.deviceId)!.at(-1)?.version === '1.1.0'),
    'the fleet still holds its offers',
  )

  // The fleet's own link works; taken out of the fleet, a device's untaken offer and link go.
  const link = await appFetch(`${svc.url}/api/device/${quiet[0]!.deviceId}/firmware/offer`, {
    headers: { authorization: `Bearer ${quiet[0]!.password}` },
  })
  t.equal(link.status, 200)
  const image = await appFetch(((await link.json()) as { url: string }).url)
  t.equal(Number((await image.arrayBuffer()).byteLength), release.size, 'an enrolled device downloads the image')
  const out = await api(svc, admin, 'PUT', `/api/admin/devices/${quiet[0]!.deviceId}/firmware`, { fleet: false })
  t.match(out.body, { fleet: false, offer: { state: 'withdrawn' } })
  await eventually(async () => offers.get(quiet[0]!.deviceId)!.at(-1)?.version === null)
  const gone = await appFetch(`${svc.url}/api/device/${quiet[0]!.deviceId}/firmware/offer`, {
    headers: { authorization: `Bearer ${quiet[0]!.password}` },
  })
  t.equal(gone.status, 404)
  t.equal((await api(svc, owner, 'PUT', `/api/admin/devices/${quiet[1]!.deviceId}/firmware`, { fleet: true })).status, 403, 'admins only')

  // The legitimate halt: failures of the enrolled fleet still stop the rollout (1 succeeded, 4 failed).
  for (const { d, c } of clients.filter(({ d }) => quiet.slice(1).includes(d)))
    c.publish(d.topics.otaProgress!, JSON.stringify({ version: '1.1.0', state: 'failed', reason: 'flash' }), { qos: 1 })
  const halted = await eventually(async () => {
    const r = (await api(svc, admin, 'GET', '/api/admin/firmware-rollouts')).body.rollouts[0]
    return r?.haltedAt ? r : null
  })
  t.match(halted.counts, { succeeded: 1, failed: 4 }, "the fleet's failures halt it")
})
