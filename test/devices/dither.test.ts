// Dithering chosen per display: a device names it in its display profile when it pairs, its owner
// changes it (PATCH /api/device/{id}), a value outside the list is a 400 that lists the allowed
// ones, the OpenAPI document describes it, and the images the device is sent follow it (a flat
// mid-grey upload is a checkerboard with Floyd–Steinberg, not with blue noise).
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall, type CallOptions } from '../helpers/http.js'
import { uploadPng } from '../helpers/uploads.js'
import { DITHER_METHODS } from '../../src/images/profiles.js'
import { checkerboardShare, decodeBmpIndices } from '../images/pixels.js'
import { appFetch } from '../helpers/app-fetch.js'

let svc: TestApp
let token: string

t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  ;({ token } = await signUp(makeClient(svc.url).client, uniqueEmail('dither'), 'correct-horse-battery', 'Dither person'))
})

const api = (path: string, opts: CallOptions = {}) => jsonCall(svc.url, path, opts)

const listsAllowed = (t: Pick<typeof import('tap'), 'match'>, message: string) => {
  for (const m of DITHER_METHODS) t.match(message, `"${m}"`, `the message lists "${m}"`)
}

t.test('a dither method outside the list is refused with the allowed ones', async (t) => {
  const init = await api('/api/device/init', { body: { display: { width: 800, height: 480, palette: 'bw', dither: 'riemersma' } } })
  t.equal(init.status, 400)
  t.equal(init.body.code, 'VALIDATION_ERROR')
  t.match(init.body.message, /dither/, `names the field: ${init.body.message}`)
  listsAllowed(t, init.body.message)
  t.equal(
    (await api('/api/device/init', { body: { display: { width: 800, height: 480, palette: 'bw', dither: 7 } } })).status,
    400,
    'a number',
  )
})

/** Sends a flat 50% grey upload to the device; answers the share of 2×2 checkerboards in its BMP. */
async function sentTexture(deviceId: string): Promise<number> {
  const key = await uploadPng(svc.url, token, { r: 128, g: 128, b: 128 }, 256, 256)
  const sent = await api('/api/upload/send', { token, body: { key, deviceId } })
  if (sent.status !== 200) throw new Error(`send: ${sent.status} ${JSON.stringify(sent.body)}`)
  const bmp = Buffer.from(await (await appFetch(sent.body.image.url as string)).arrayBuffer())
  return checkerboardShare(decodeBmpIndices(bmp).indices, 256, 256)
}

t.test('the method a device pairs with is kept, used, and changed by its owner', async (t) => {
  const dev = await pairDevice(svc, token, { palette: 'bw', width: 256, height: 256, dither: 'floyd-steinberg' })
  const before = await api(`/api/device/${dev.deviceId}`, { token })
  t.equal(before.status, 200)
  t.same(
    before.body.display,
    { width: 256, height: 256, palette: 'bw', fit: 'cover', dither: 'floyd-steinberg' },
    'stored with the display',
  )
  const fs = await sentTexture(dev.deviceId)
  t.ok(fs > 0.8, `Floyd–Steinberg: ${(fs * 100).toFixed(0)}% of 2×2 windows are a checkerboard`)

  const bad = await api(`/api/device/${dev.deviceId}`, { method: 'PATCH', token, body: { display: { dither: 'ordered' } } })
  t.equal(bad.status, 400, 'PATCH with an unknown method')
  listsAllowed(t, bad.body.message)
  const size = await api(`/api/device/${dev.deviceId}`, { method: 'PATCH', token, body: { display: { width: 400 } } })
  t.equal(size.status, 400, "the owner cannot change the panel's size")

  const changed = await api(`/api/device/${dev.deviceId}`, { method: 'PATCH', token, body: { display: { dither: 'blue-noise' } } })
  t.equal(changed.status, 200)
  t.same(changed.body.display, { width: 256, height: 256, palette: 'bw', fit: 'cover', dither: 'blue-noise' }, 'only dither changed')
  const bn = await sentTexture(dev.deviceId)
  t.ok(bn < 0.4, `blue noise: ${(bn * 100).toFixed(0)}%`)

  const other = await pairDevice(svc, token, { palette: 'bw', width: 256, height: 256 })
  t.notOk('dither' in (await api(`/api/device/${other.deviceId}`, { token })).body.display, 'left out, nothing is stored')
  t.ok((await sentTexture(other.deviceId)) < 0.4, "and the palette's default (blue noise for 1 bit) is used")
})

t.test('the OpenAPI document describes the field', async (t) => {
  const doc = await api('/api/openapi.json')
  const profile = doc.body.components.schemas.DisplayProfile
  t.same(profile.properties.dither.enum, [...DITHER_METHODS])
  t.match(profile.properties.dither.description, /blue-noise/)
  t.notOk(profile.required.includes('dither'), 'optional')
})
