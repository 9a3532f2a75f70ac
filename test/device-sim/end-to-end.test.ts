// The simulator against the real service end to end: it pairs (polling at the service's
// interval), a user claims it with the pin it shows, a prompt and a generated image arrive over
// MQTT, the image saved on disk matches its sha256, its status reports make the device synced,
// and it acknowledges commands, also one sent while it sleeps.
import t from 'tap'
import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import sharp from 'sharp'
import { SimDevice, decodeBmp, loadState, renderPreview, resolveProfile } from '../../device-sim/index.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually, mqttUrl } from '../helpers/mqtt.js'
import { call, nextEvent, tempDir, type DeviceDetail, type EventRecord } from './helpers.js'
import { appFetch } from '../helpers/app-fetch.js'

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

t.test('a simulated device pairs, is claimed, and shows a generated image', async (t) => {
  const svc = await startApp(t, {
    env: { DEVICE_POLL_INTERVAL: '1', LOCAL_PROVIDER_DURATION_MS: '300', GENERATION_POLL_BASE_MS: '50', GENERATION_TICK_MS: '50' },
  })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('sim'))
  const dir = await tempDir(t)
  const statePath = join(dir, 'state', 'kitchen.json')
  const sim = new SimDevice({
    server: svc.url,
    name: 'kitchen',
    display: resolveProfile('bw-800x480'),
    statePath,
    outDir: join(dir, 'images'),
    firmware: '2.4.1-test',
    // The app listens on a port picked at start (MQTT_PORT=0), so the URL it hands out is not it.
    mqttUrl: mqttUrl(svc),
    reconnectMinMs: 100,
  })
  t.teardown(() => sim.stop())
  const warnings: string[] = []
  sim.on('warning', ({ message }) => warnings.push(message))
  let slowDowns = 0
  sim.on('slow-down', () => (slowDowns += 1))

  const pairingShown = nextEvent(sim, 'pairing')
  const online = sim.start()
  const pairing = await pairingShown
  t.match(pairing.pinCode, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/, 'it shows a pin code')
  t.equal(pairing.verificationUriComplete, `${svc.url}/device?user_code=${pairing.pinCode}`, 'and the link its QR code encodes')
  t.equal(pairing.interval, 1, 'with the interval the service asked for')
  t.equal((await loadState(statePath))?.pairing?.deviceId, pairing.deviceId, 'the pairing in progress is saved')

  // The user claims it with the pin the simulator shows.
  const claimed = await call(svc, 'POST', '/api/device/validate', token, { pinCode: pairing.pinCode, name: 'Kitchen', color: '#ffaa00' })
  t.equal(claimed.status, 200)
  const configArrives = nextEvent(sim, 'config')
  await online
  t.equal(sim.deviceId, pairing.deviceId, 'connected as the device it paired as')
  t.equal(slowDowns, 0, 'it polled no faster than the interval (never told SLOW_DOWN)')
  t.ok(sim.connected)

  const saved = await loadState(statePath)
  t.equal(saved?.credentials?.username, pairing.deviceId, 'credentials are in the state file')
  t.equal(saved?.credentials?.clientId, pairing.deviceId)
  t.notOk(saved?.pairing, 'and the finished pairing is not')
  t.equal((await stat(statePath)).mode & 0o777, 0o600, 'the state file is readable by its owner only')

  const config = await configArrives
  t.equal(config.message.version, 1, 'the retained config arrives')
  t.equal(config.message.name, 'Kitchen')
  t.equal(config.message.color, '#ffaa00')

  // A prompt for the device reaches it.
  const promptArrives = nextEvent(sim, 'prompt')
  const prompt = await call<{ id: string; text: string }>(svc, 'POST', '/api/prompts', token, {
    text: 'a lighthouse',
    deviceId: pairing.deviceId,
  })
  t.equal(prompt.status, 201)
  t.equal((await promptArrives).promptId, prompt.body.id, 'the prompt arrives')

  // A generated image reaches it, is checked, saved and shown.
  const imageArrives = nextEvent(sim, 'image', undefined, 30_000)
  const job = await call<{ id: string }>(svc, 'POST', '/api/generate', token, { promptId: prompt.body.id, deviceId: pairing.deviceId })
  t.equal(job.status, 202)
  const image = await imageArrives
  t.equal(image.message.format, 'bmp1', 'a 1-bit panel gets a 1-bit BMP')
  t.equal(image.message.width, 800)
  t.equal(image.message.height, 480)
  t.ok(image.file, 'the image was saved')
  t.equal(image.file, join(dir, 'images', `${image.message.imageId}.bmp`))
  const onDisk = await readFile(image.file!)
  t.equal(onDisk.length, 48062, 'an 800×480 1-bit BMP is 48,062 bytes')
  t.equal(sha256(onDisk), image.message.sha256, 'the file on disk matches the sha256 in the message')
  const served = Buffer.from(await (await appFetch(image.message.url)).arrayBuffer())
  t.ok(served.equals(onDisk), 'and is exactly what the service serves')
  t.equal(sim.shownImageId, image.message.imageId)
  // What the device reports is in its detail: the image it shows, its battery, and in sync.
  const detail = await eventually(async () => {
    const r = await call<{
      isSynced: boolean
      desiredImageId: string | null
      status: { shownImageId: string | null; battery?: number } | null
    }>(svc, 'GET', `/api/device/${pairing.deviceId}`, token)
    return r.body.status?.shownImageId === image.message.imageId ? r.body : null
  })
  t.equal(detail.desiredImageId, image.message.imageId, 'the detail names the image sent')
  t.equal(detail.status?.shownImageId, image.message.imageId, 'and the one the device reports showing')
  t.type(detail.status?.battery, 'number', 'with its battery')
  t.equal(detail.isSynced, true)

  // The terminal preview: the BMP decodes to the same pixels as the PNG variant of the image.
  const done = await eventually(async () => {
    const r = await call<{ status: string; result: { images: Array<{ format: string; url: string }> } | null }>(
      svc,
      'GET',
      `/api/generate/${job.body.id}`,
      token,
    )
    return r.body.status === 'succeeded' ? r.body : null
  })
  const pngUrl = done.result!.images.find((i) => i.format === 'png1')!.url
  const png = await sharp(Buffer.from(await (await appFetch(pngUrl)).arrayBuffer()))
    .removeAlpha()
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true })
  const bmp = decodeBmp(onDisk)
  t.same([bmp.width, bmp.height], [png.info.width, png.info.height])
  t.ok(png.info.channels === 3 && bmp.data.equals(png.data), 'the simulator reads its 1-bit BMP pixel for pixel')
  const ascii = (await renderPreview(onDisk, { columns: 40 })).split('\n')
  t.equal(ascii.length, 12, 'a 40-column ASCII preview of 800×480 has 12 lines (cells are twice as tall as wide)')
  t.ok(
    ascii.every((l) => l.length <= 40 && /^[ .:\-=+*#%@]*$/.test(l)),
    'of ramp characters',
  )
  const colour = (await renderPreview(onDisk, { columns: 40, color: true })).split('\n')
  t.equal(colour.length, 12, 'the colour preview packs two pixel rows per line')
  t.equal(colour[0]!.split('▀').length - 1, 40, 'with 40 half blocks per line')

  // Its status reports make the service see it in sync with what it should show.
  const synced = await eventually(async () => {
    const d = await call<DeviceDetail>(svc, 'GET', `/api/device/${pairing.deviceId}`, token)
    return d.body.isSynced ? d.body : null
  }, 15_000)
  t.equal(synced.isActive, true)
  t.equal(synced.info.firmware, '2.4.1-test', 'the reported firmware is recorded')
  t.ok(sim.battery < 100, `showing an image drained the battery (${sim.battery}%)`)

  // Commands are acknowledged, also one sent while the device sleeps.
  const identified = nextEvent(sim, 'identify')
  const identify = await call<{ commandId: string }>(svc, 'POST', `/api/device/${pairing.deviceId}/command`, token, { command: 'identify' })
  t.equal(identify.status, 202)
  t.equal((await identified).deviceId, pairing.deviceId)

  const asleep = nextEvent(sim, 'disconnected')
  const sleep = await call<{ commandId: string }>(svc, 'POST', `/api/device/${pairing.deviceId}/command`, token, {
    command: 'sleep',
    seconds: 1,
  })
  t.equal(sleep.status, 202)
  t.equal((await asleep).reason, 'sleep', 'sleep disconnects the device')
  const wakes = nextEvent(sim, 'connected')
  const refreshed = nextEvent(sim, 'command', (c) => c.command === 'refresh')
  const whileAsleep = await call<{ commandId: string }>(svc, 'POST', `/api/device/${pairing.deviceId}/command`, token, {
    command: 'refresh',
  })
  t.equal((await wakes).sessionPresent, true, 'it comes back to its persistent session')
  t.equal((await refreshed).commandId, whileAsleep.body.commandId, 'and gets the command sent while it slept')

  const acked = await eventually(async () => {
    const { body } = await call<{ events: EventRecord[] }>(svc, 'GET', `/api/device/${pairing.deviceId}/events?limit=100`, token)
    const ackOf = (id: string) => body.events.find((e) => e.type === 'device.ack' && e.data.commandId === id && e.data.matched === true)
    return ackOf(identify.body.commandId) && ackOf(sleep.body.commandId) && ackOf(whileAsleep.body.commandId) ? body.events : null
  }, 15_000)
  t.ok(acked, 'identify, sleep and refresh were acknowledged against their command ids')
  t.same(warnings, [], 'nothing went wrong on the device')
  t.equal(sim.stats.errors, 0)
})
