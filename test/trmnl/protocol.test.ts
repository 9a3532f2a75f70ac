// TRMNL's firmware over HTTP, request for request: the headers it sends (request_headers.cpp) and
// every answer checked against what its parsers read (parse_response_api_setup.cpp,
// parse_response_api_display.cpp): field names, types and status values. The BMP it downloads is
// checked byte by byte.
import { createPublicKey, generateKeyPairSync, type KeyObject, sign } from 'node:crypto'
import { eq } from 'drizzle-orm'
import sharp from 'sharp'
import t, { type Test } from 'tap'
import { checkPng } from '../../device-sim/index.js'
import { deviceCommand, deviceInit } from '../../src/devices/tables.js'
import { trmnlDevice } from '../../src/trmnl/tables.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { eventually } from '../helpers/mqtt.js'
import { appFetch } from '../helpers/app-fetch.js'

let now = Date.parse('2026-06-01T12:00:00Z')
const CACHE_NAME = /^[0-9a-f]{13}-\d{10}$/
const clock = () => new Date(now)
const MAC = 'A0:B7:65:1C:2D:3E'

/** The headers the firmware sends with /api/display (request_headers.cpp). */
function displayHeaders(token: string, extra: Record<string, string> = {}) {
  return {
    ID: MAC,
    'Access-Token': token,
    'Refresh-Rate': '900',
    'Battery-Voltage': '3.9',
    // Before 1.5.2: the BMP every firmware draws (1.5.2 and later get PNG, checked below).
    'FW-Version': '1.4.8',
    Model: 'og',
    RSSI: '-61',
    Width: '800',
    Height: '480',
    'Content-Type': 'application/json',
    ...extra,
  }
}

async function get(svc: TestApp, path: string, headers: Record<string, string>) {
  const res = await appFetch(`${svc.url}${path}`, { headers })
  const body = await res.json()
  return { status: res.status, body }
}

/** The firmware's 1-bit BMP3: 62-byte header, positive height (bottom-up rows), palette black then white. */
function checkBmp(t: Test, bmp: Buffer, width: number, height: number) {
  const stride = Math.ceil(width / 32) * 4
  t.equal(bmp.subarray(0, 2).toString('latin1'), 'BM')
  t.equal(bmp.readUInt32LE(2), bmp.length, 'the file size field is the file size')
  t.equal(bmp.length, 62 + stride * height, `${62 + stride * height} bytes`)
  t.equal(bmp.readUInt32LE(10), 62, 'pixels start after the 62-byte header')
  t.equal(bmp.readUInt32LE(14), 40, 'BITMAPINFOHEADER')
  t.equal(bmp.readInt32LE(18), width)
  t.equal(bmp.readInt32LE(22), height, 'positive height: bottom-up')
  t.equal(bmp.readUInt16LE(26), 1, 'one plane')
  t.equal(bmp.readUInt16LE(28), 1, '1 bit per pixel')
  t.equal(bmp.readUInt32LE(30), 0, 'no compression')
  t.equal(bmp.readUInt32LE(34), stride * height, 'the image data size the firmware checks')
  t.equal(bmp.readUInt32LE(46), 2, 'two palette entries')
  t.same([...bmp.subarray(54, 62)], [0, 0, 0, 0, 255, 255, 255, 0], 'palette: black, then white')
}

t.test('a TRMNL device pairs with the code it paints, shows what it is sent, reports, logs and goes offline', async (t) => {
  const svc = await startApp(t, {
    clock,
    env: { DEVICE_POLL_INTERVAL: '0', TRMNL_REFRESH_SECONDS: '600', TRMNL_OFFLINE_MARGIN_SECONDS: '60' },
  })
  const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl'))

  t.match(await get(svc, '/api/setup', { 'FW-Version': '1.5.2', Model: 'og' }), { status: 400, body: { code: 'VALIDATION_ERROR' } })
  // Firmware before 1.5.2 gets the setup screen as the 48,062-byte BMP it checks (device_setup.cpp).
  const setup = await get(svc, '/api/setup', { ID: MAC, 'FW-Version': '1.4.8', Model: 'og' })
  t.equal(setup.status, 200)
  // parse_response_api_setup.cpp reads status (int), api_key, friendly_id, image_url, filename (strings).
  t.same(Object.keys(setup.body).sort(), ['api_key', 'auth_mode', 'filename', 'friendly_id', 'image_url', 'status'])
  t.equal(setup.body.status, 200)
  t.match(setup.body.api_key, /^[\w-]{32}$/)
  t.match(setup.body.friendly_id, /^[A-Z0-9]{4}-[A-Z0-9]{4}$/, 'friendly_id is the pairing code')
  const key = setup.body.api_key as string
  const screen = Buffer.from(await (await appFetch(setup.body.image_url)).arrayBuffer())
  checkBmp(t, screen, 800, 480)
  t.ok(screen.subarray(62).includes(0x00), 'the setup screen has something drawn on it')

  // Nobody claimed it yet: body status 202 and the code again (the firmware paints its own pairing screen).
  const waiting = await get(svc, '/api/display', displayHeaders(key))
  t.match(waiting, { status: 200, body: { status: 202, friendly_id: setup.body.friendly_id, reset_firmware: false } })
  t.equal((await get(svc, '/api/display', displayHeaders('not-a-token'))).status, 401, 'an unknown token is refused')
  t.equal((await get(svc, '/api/display', { ...displayHeaders(key), ID: 'A0:B7:65:1C:2D:3F' })).status, 401, 'with another MAC too')

  // The owner types the code, exactly as for an MQTT frame.
  const claimed = await jsonCall(svc.url, '/api/device/validate', {
    token: owner,
    body: { pinCode: setup.body.friendly_id, name: 'Hall TRMNL' },
  })
  t.equal(claimed.status, 200, JSON.stringify(claimed.body))
  const deviceId = claimed.body.device.id as string

  const first = await get(svc, '/api/display', displayHeaders(key))
  t.equal(first.status, 200)
  // parse_response_api_display.cpp: status, image_url, filename, refresh_rate, update_firmware, firmware_url, reset_firmware.
  // special_function is left out: it sets what the frame's button does, the owner's choice on the device.
  t.match(first.body, {
    status: 0,
    image_url: /^http/,
    // A name the firmware's cache keeps (filesystem.cpp): 13 characters, a dash, a 10-digit Unix time.
    filename: CACHE_NAME,
    refresh_rate: 600,
    update_firmware: false,
    firmware_url: null,
    reset_firmware: false,
  })
  t.type(first.body.refresh_rate, 'number')
  // The optional playlist (the cache names of the live rotation): without a schedule, what it shows now.
  t.same(first.body.playlist, [first.body.filename])
  t.equal(first.body.special_function, 'identify', 'what a double press of its button does, as the firmware reads it')
  t.equal(first.body.image_url_timeout, 30)
  const dev = (await jsonCall(svc.url, `/api/device/${deviceId}`, { token: owner })).body
  t.match(dev, { isActive: true, name: 'Hall TRMNL', status: { battery: 75, firmware: '1.4.8' }, display: { width: 800, height: 480 } })

  // An image sent from the app: black on top, white below, so the row order shows in the bytes.
  const png = await sharp({ create: { width: 800, height: 480, channels: 3, background: '#fff' } })
    .composite([
      {
        input: await sharp({ create: { width: 800, height: 240, channels: 3, background: '#000' } })
          .png()
          .toBuffer(),
        top: 0,
        left: 0,
      },
    ])
    .png()
    .toBuffer()
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'half.png')
  const up = await (
    await appFetch(`${svc.url}/api/upload`, { method: 'POST', headers: { authorization: `Bearer ${owner}` }, body: form })
  ).json()
  const sent = await jsonCall(svc.url, '/api/upload/send', { token: owner, body: { key: up.key, deviceId } })
  t.equal(sent.status, 200)
  const imageId = sent.body.imageId as string
  const shows = await get(svc, '/api/display', displayHeaders(key))
  t.match(shows.body, { status: 0, filename: CACHE_NAME, image_url: new RegExp(`/${imageId}/bmp1`) })
  t.equal(
    (await get(svc, '/api/display', displayHeaders(key))).body.filename,
    shows.body.filename,
    'the same name while the image is the same',
  )
  // The firmware downloads with its ID and Access-Token headers.
  const bmp = Buffer.from(await (await appFetch(shows.body.image_url, { headers: displayHeaders(key) })).arrayBuffer())
  checkBmp(t, bmp, 800, 480)
  t.equal(bmp.length, 48_062, 'the original model’s 48,062 bytes')
  t.ok(
    bmp.subarray(62, 62 + 100).every((b) => b === 0xff),
    'the first row in the file is the bottom of the picture (white)',
  )
  t.ok(
    bmp.subarray(bmp.length - 100).every((b) => b === 0x00),
    'the last row is its top (black)',
  )
  await eventually(async () => (await jsonCall(svc.url, `/api/device/${deviceId}`, { token: owner })).body.isSynced)
  t.pass('in sync once the device fetched the file it was given')
  // Firmware 1.5.2 and later: the same picture as a 1-bit PNG, under its own file name.
  const newer = (await get(svc, '/api/display', displayHeaders(key, { 'FW-Version': '1.5.2' }))).body
  t.match(newer.filename, CACHE_NAME)
  t.not(newer.filename, shows.body.filename)
  const asPng = Buffer.from(await (await appFetch(newer.image_url, { headers: displayHeaders(key) })).arrayBuffer())
  t.same(checkPng(asPng), { width: 800, height: 480, bitDepth: 1 }, 'a 1-bit PNG of the panel size')
  t.equal(asPng[25], 0, 'greyscale (colour type 0): firmware 1.6.6 on inverts a 1-bit palette PNG')
  t.ok(asPng.length < bmp.length, `smaller on the air (${asPng.length} bytes)`)
  await get(svc, '/api/display', displayHeaders(key))
  // The device's own headers fetch it too, but nothing it was not given.
  const byHeaders = await appFetch(`${svc.url}/api/trmnl/images/${deviceId}/${imageId}/bmp1`, { headers: displayHeaders(key) })
  t.equal(byHeaders.status, 200)
  const other = await appFetch(`${svc.url}/api/trmnl/images/${deviceId}/${crypto.randomUUID()}/bmp1`, { headers: displayHeaders(key) })
  t.equal(other.status, 401)
  const elsewhere = await appFetch(`${svc.url}/api/trmnl/images/${crypto.randomUUID()}/${imageId}/bmp1`, { headers: displayHeaders(key) })
  t.equal(elsewhere.status, 401, "the headers of one device fetch nothing in another device's name")
  t.equal((await appFetch(`${svc.url}/api/trmnl/images/${deviceId}/${imageId}/bmp1?exp=9999999999&sig=forged`)).status, 401)
  const signedPath = new URL(shows.body.image_url)
  const moved = `${svc.url}/api/trmnl/images/${crypto.randomUUID()}/${imageId}/bmp1${signedPath.search}`
  t.equal((await appFetch(moved)).status, 401, 'a signature is for its own path only')

  // Commands, as polling firmware can carry them out.
  const command = async (body: Record<string, unknown>) => {
    const sent = await jsonCall(svc.url, `/api/device/${deviceId}/command`, { token: owner, body })
    const answer = (await get(svc, '/api/display', displayHeaders(key))).body
    const [stored] = await svc.app.database.db.select().from(deviceCommand).where(eq(deviceCommand.id, sent.body.commandId))
    return { answer, stored }
  }
  const identify = await command({ command: 'identify' })
  t.match(identify.answer, { filename: CACHE_NAME, image_url: /\/api\/trmnl\/screens\/identify\// }, 'identify: a screen naming the frame')
  const named = Buffer.from(await (await appFetch(identify.answer.image_url)).arrayBuffer())
  checkBmp(t, named, 800, 480)
  t.match(identify.stored, { status: 'acked', result: { ok: true } })
  t.equal((await get(svc, '/api/display', displayHeaders(key))).body.filename, shows.body.filename, 'then the picture again')
  const refresh = await command({ command: 'refresh' })
  t.match(refresh.answer.filename, CACHE_NAME)
  t.not(refresh.answer.filename, shows.body.filename, 'refresh: the same picture under a new name, so it is drawn again')
  t.equal(
    refresh.answer.filename.slice(0, 13),
    shows.body.filename.slice(0, 13),
    'with the same first 13 characters: the firmware drops the older copy',
  )
  const sleep = await command({ command: 'sleep', seconds: 120 })
  t.equal(sleep.answer.refresh_rate, 120, 'sleep: back in that many seconds')
  t.match(sleep.stored, { status: 'acked', result: { seconds: 120 } })
  const reboot = await command({ command: 'reboot' })
  t.match(
    reboot.stored,
    { status: 'failed', result: { ok: false, error: /not available on TRMNL firmware/ } },
    'reboot: answered, as failed, saying why',
  )

  // Logs go to the device's log store.
  const logged = await appFetch(`${svc.url}/api/log`, {
    method: 'POST',
    headers: { ...displayHeaders(key) },
    body: JSON.stringify({
      logs: [{ id: 7, message: 'wifi connected', created_at: Math.floor(now / 1000), level: 'info', battery_voltage: 3.9 }],
    }),
  })
  t.equal(logged.status, 204)
  const logs = (await jsonCall(svc.url, `/api/device/${deviceId}/logs`, { token: owner })).body.logs
  t.match(logs, [{ message: 'wifi connected', level: 'info', fields: { id: 7, battery_voltage: 3.9 } }])
  t.equal((await appFetch(`${svc.url}/api/log`, { method: 'POST', headers: displayHeaders('nope'), body: '{"logs":[]}' })).status, 401)

  // Overdue by more than its refresh interval plus the margin: offline, as an MQTT device would be.
  now += (900 + 61) * 1000
  t.equal(await svc.app.trmnl!.sweep(), 1)
  const events = (await jsonCall(svc.url, `/api/device/${deviceId}/events?limit=50`, { token: owner })).body.events as Array<{
    type: string
    data: Record<string, unknown>
  }>
  t.match(
    events.find((e) => e.type === 'device.disconnected'),
    { data: { reason: 'poll_overdue', transport: 'http' } },
  )
  t.ok(events.some((e) => e.type === 'device.connected' && e.data.transport === 'http'))
  t.equal((await jsonCall(svc.url, `/api/device/${deviceId}`, { token: owner })).body.isActive, false)
  await get(svc, '/api/display', displayHeaders(key))
  t.equal((await jsonCall(svc.url, `/api/device/${deviceId}`, { token: owner })).body.isActive, true, 'and online again with its next poll')

  // A setup with the same MAC never gets the existing key.
  const again = await get(svc, '/api/setup', { ID: MAC, 'FW-Version': '1.5.2', Model: 'og' })
  t.not(again.body.api_key, key)
  t.not(again.body.friendly_id, setup.body.friendly_id)

  // Deleted: the firmware is told to forget its token.
  t.equal((await jsonCall(svc.url, '/api/device/delete', { method: 'DELETE', token: owner, body: { deviceId } })).status, 200)
  t.match((await get(svc, '/api/display', displayHeaders(key))).body, { reset_firmware: true })
})

t.test('a MAC is no credential: another owner gets a device of its own; the same owner re-pairing keeps the record', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl-owner'))
  const { token: other } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl-other'))
  const pair = async (token: string, replace?: boolean) => {
    const s = (await get(svc, '/api/setup', { ID: MAC, 'FW-Version': '1.5.2', Model: 'og' })).body
    const body = { pinCode: s.friendly_id, name: 'Frame', ...(replace ? { replace } : {}) }
    const claimed = await jsonCall(svc.url, '/api/device/validate', { token, body })
    t.equal(claimed.status, 200)
    t.equal((await get(svc, '/api/display', displayHeaders(s.api_key))).body.status, 0)
    return { key: s.api_key as string, deviceId: claimed.body.device.id as string }
  }
  const first = await pair(owner)
  await jsonCall(svc.url, `/api/device/${first.deviceId}/command`, { token: owner, body: { command: 'identify' } })

  // Someone who read the MAC off the box pairs "it" to their account: a device of their own, nothing of the owner's.
  const theirs = await pair(other)
  t.not(theirs.deviceId, first.deviceId)
  t.equal((await get(svc, '/api/display', displayHeaders(first.key))).body.status, 0, "the owner's token still works")
  t.equal((await jsonCall(svc.url, `/api/device/${first.deviceId}`, { token: other })).status, 404)

  // The owner resets the frame and pairs it again: asked first, naming the device it would replace
  // (someone who set up a frame with this MAC and got the owner to type its code would otherwise
  // get their token into the owner's device)...
  const s2 = (await get(svc, '/api/setup', { ID: MAC, 'FW-Version': '1.5.2', Model: 'og' })).body
  const asked = await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: s2.friendly_id, name: 'Frame' } })
  t.match(asked, { status: 409, body: { code: 'DEVICE_ALREADY_PAIRED', message: new RegExp(`“Frame” \\(${first.deviceId}\\)`) } })
  t.equal((await get(svc, '/api/display', displayHeaders(s2.api_key))).body.status, 202, 'not claimed: still pairing')
  t.equal((await get(svc, '/api/display', displayHeaders(first.key))).body.status, 0, 'and the device keeps its token')
  // ...then, confirmed, the same device record takes the new token.
  const again = await pair(owner, true)
  t.equal(
    (await jsonCall(svc.url, `/api/device/${again.deviceId}`, { token: owner })).status,
    404,
    'the pairing just made is folded into the earlier device',
  )
  const list = (await jsonCall(svc.url, '/api/device', { token: owner })).body.devices as Array<{ id: string }>
  t.same(
    list.map((d) => d.id),
    [first.deviceId],
    'and no second one on the account',
  )
  t.equal((await get(svc, '/api/display', displayHeaders(first.key))).status, 401, 'the old token is replaced')
  const events = (await jsonCall(svc.url, `/api/device/${first.deviceId}/events?limit=50`, { token: owner })).body.events as Array<{
    type: string
    data: Record<string, unknown>
  }>
  t.ok(
    events.some((e) => e.type === 'device.command'),
    'its history is kept',
  )
  t.ok(events.some((e) => e.type === 'device.credentials_issued' && e.data.repaired === true))
})

t.test('a pairing a frame polled with is never forgotten; a setup no frame followed up is, a day after', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
  const s = (await get(svc, '/api/setup', { ID: MAC, 'FW-Version': '1.5.2', Model: 'og' })).body
  // A setup nobody polls with (the firmware polls right after its own): nothing holds its token.
  await get(svc, '/api/setup', { ID: 'A0:B7:65:1C:2D:3F', 'FW-Version': '1.5.2', Model: 'og' })
  const db = svc.app.database.db
  t.equal(await svc.app.trmnl!.sweep(), 0)
  t.equal((await get(svc, '/api/display', displayHeaders(s.api_key))).body.status, 202, 'pending: kept')
  const inits = await db.select().from(deviceInit)
  await db.update(deviceInit).set({ status: 'expired' })
  // Expired while the device still polls: reopened (a reset would make the firmware wipe its Wi-Fi).
  const reopened = await get(svc, '/api/display', displayHeaders(s.api_key))
  t.match(reopened.body, { status: 202, reset_firmware: false }, 'expired but still asking: open again')
  t.equal((await db.select().from(deviceInit)).filter((i) => i.status === 'pending').length, 1)
  // Both stopped asking a week ago: the frame was unplugged, the other setup never polled.
  await db.update(deviceInit).set({ status: 'expired', expiresAt: new Date(Date.now() - 7 * 86_400_000) })
  await svc.app.trmnl!.sweep()
  const rows = await db.select().from(trmnlDevice)
  t.equal(rows.length, 1, 'the setup no frame polled with goes')
  t.equal(rows[0]!.mac, MAC, "the frame's pairing stays")
  // Plugged in again: the same code, open again, its Wi-Fi untouched.
  t.match(
    (await get(svc, '/api/display', displayHeaders(s.api_key))).body,
    { status: 202, friendly_id: s.friendly_id, reset_firmware: false },
    'back after a week: still pairing with its code',
  )
  t.equal(inits.length, 2)
})

t.test(
  'no fold across organizations or into a disconnected device; logs before the claim; battery from the right header; asleep is not offline',
  async (t) => {
    now = Date.parse('2026-06-01T12:00:00Z')
    const svc = await startApp(t, {
      clock,
      env: { DEVICE_POLL_INTERVAL: '0', TRMNL_REFRESH_SECONDS: '600', TRMNL_OFFLINE_MARGIN_SECONDS: '60' },
    })
    const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl-org'))
    const org = await jsonCall(svc.url, '/api/auth/organization/create', {
      token: owner,
      body: { name: 'Studio', slug: `studio-${Date.now()}` },
    })
    t.equal(org.status, 200, JSON.stringify(org.body))
    const setup = async () => (await get(svc, '/api/setup', { ID: MAC, 'FW-Version': '1.5.2', Model: 'og' })).body
    const claim = async (pin: string, extra: Record<string, string> = {}) =>
      (await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: pin, name: 'Frame', ...extra } })).body.device
        .id as string

    // Logs sent before anyone claimed the device: accepted and dropped (the firmware would resend a refusal forever).
    const a = await setup()
    const early = await appFetch(`${svc.url}/api/log`, {
      method: 'POST',
      headers: displayHeaders(a.api_key),
      body: '{"logs":[{"message":"boot","level":"info"}]}',
    })
    t.equal(early.status, 204)
    const orgDevice = await claim(a.friendly_id, { organizationId: org.body.id })
    await get(svc, '/api/display', displayHeaders(a.api_key, { 'Battery-Voltage': '0', 'Percent-Charged': '64' }))
    t.match((await jsonCall(svc.url, `/api/device/${orgDevice}`, { token: owner })).body.status, { battery: 64 }, 'Percent-Charged wins')

    // The same MAC claimed as a personal device: not folded into the organization's.
    const b = await setup()
    const personal = await claim(b.friendly_id)
    t.equal((await get(svc, '/api/display', displayHeaders(b.api_key))).body.status, 0)
    t.equal((await jsonCall(svc.url, `/api/device/${personal}`, { token: owner })).status, 200, 'a device of its own')
    t.equal((await get(svc, '/api/display', displayHeaders(a.api_key))).body.status, 0, "the organization's frame keeps its token")

    // A disconnected device is not brought back by a new pairing of its MAC.
    await jsonCall(svc.url, '/api/device/disconnect', { token: owner, body: { deviceId: personal } })
    t.match((await get(svc, '/api/display', displayHeaders(b.api_key))).body, { reset_firmware: true }, 'disconnected: told to reset')
    const c = await setup()
    const third = await claim(c.friendly_id)
    t.equal((await get(svc, '/api/display', displayHeaders(c.api_key))).body.status, 0)
    t.equal((await jsonCall(svc.url, `/api/device/${third}`, { token: owner })).status, 200, 'paired as a new device')
    t.match((await jsonCall(svc.url, `/api/device/${personal}`, { token: owner })).body, { isActive: false })

    // 0 V is a board on USB: no battery reading, not an empty battery.
    await get(svc, '/api/display', displayHeaders(c.api_key, { 'Battery-Voltage': '0' }))
    t.notOk('battery' in (await jsonCall(svc.url, `/api/device/${third}`, { token: owner })).body.status)

    // Asleep by its day plan: asked to come back at the end of the window, and not offline meanwhile.
    const key = await uploadKey(svc, owner)
    const list = (
      await jsonCall(svc.url, '/api/playlists', {
        token: owner,
        body: { name: 'P', mode: 'sequential', itemSeconds: 3600, items: [{ kind: 'upload', key }] },
      })
    ).body
    const days = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
    const put = await jsonCall(svc.url, `/api/device/${third}/schedule`, {
      token: owner,
      method: 'PUT',
      body: {
        timeZone: 'UTC',
        rules: [{ playlistId: list.id, days, from: '00:00', to: '24:00' }],
        sleep: [{ from: '11:00', to: '15:00' }],
      },
    })
    t.equal(put.status, 200, JSON.stringify(put.body))
    await svc.app.scheduler!.tick()
    t.equal((await get(svc, '/api/display', displayHeaders(c.api_key))).body.refresh_rate, 3 * 3600, 'until 15:00')
    now += (600 + 61) * 1000
    t.equal(await svc.app.trmnl!.sweep(), 1, 'only the disconnected-then-silent ones go offline')
    t.match((await jsonCall(svc.url, `/api/device/${third}`, { token: owner })).body, { isActive: true }, 'the sleeping frame stays online')
  },
)

async function uploadKey(svc: TestApp, token: string): Promise<string> {
  const png = await sharp({ create: { width: 80, height: 60, channels: 3, background: '#888' } })
    .png()
    .toBuffer()
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'p.png')
  return (
    await (await appFetch(`${svc.url}/api/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })).json()
  ).key
}

t.test("the firmware's Ed25519 identity is bound at its first signed request and required from then on", async (t) => {
  now = Date.parse('2026-06-01T12:00:00Z')
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('trmnl-ed'))
  const s = (await get(svc, '/api/setup', { ID: MAC, 'FW-Version': '1.7.0', Model: 'og' })).body
  t.equal(s.auth_mode, 'ed25519', 'setup asks firmware with a device identity to sign')
  await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: s.friendly_id, name: 'Signed' } })
  const time = await get(svc, '/api/time', {})
  t.ok(Math.abs(time.body.timestamp_ms - Date.now()) < 5000, "/api/time answers the service's time")
  const at = Date.now()

  const key = generateKeyPairSync('ed25519').privateKey
  const other = generateKeyPairSync('ed25519').privateKey
  /** What auth_signature.cpp sends: the 8-byte big-endian timestamp and the 32-byte key, signed. */
  const signed = (k: KeyObject, ms: number, pubOf: KeyObject = k) => {
    const spki = createPublicKey(pubOf).export({ format: 'der', type: 'spki' })
    const pub = spki.subarray(spki.length - 32)
    const message = Buffer.alloc(40)
    message.writeBigUInt64BE(BigInt(ms), 0)
    pub.copy(message, 8)
    return { 'X-Public-Key': pub.toString('hex'), 'X-Signature': sign(null, message, k).toString('hex'), 'X-Timestamp': String(ms) }
  }
  const poll = (extra: Record<string, string>) => get(svc, '/api/display', displayHeaders(s.api_key, extra))

  t.equal((await poll(signed(key, at))).body.status, 0, 'the first signed poll binds the key')
  t.match(
    await poll({}),
    { status: 401, body: { code: 'UNAUTHORIZED', message: /signs its requests/ } },
    'unsigned is refused from then on',
  )
  t.match(await poll(signed(key, at)), { status: 401, body: { message: /already used/ } }, 'a replayed header set is refused')
  t.match(await poll(signed(other, at + 1)), { status: 401, body: { message: /not the key/ } }, 'another key is refused')
  t.match(
    await poll(signed(other, at + 2, key)),
    { status: 401, body: { message: /does not verify/ } },
    'a signature by another key is refused',
  )
  t.match(await poll(signed(key, at - 10 * 60_000)), { status: 401, body: { message: /too far/ } }, 'an old timestamp is refused')
  t.match(await poll({ 'X-Public-Key': 'zz' }), { status: 401, body: { message: /go together/ } })
  t.equal((await poll(signed(key, at + 3))).body.status, 0, 'a fresh signature by the bound key passes')
  const log = await appFetch(`${svc.url}/api/log`, {
    method: 'POST',
    headers: displayHeaders(s.api_key),
    body: '{"logs":[{"message":"x"}]}',
  })
  t.equal(log.status, 401, '/api/log requires it too')
  const logSigned = await appFetch(`${svc.url}/api/log`, {
    method: 'POST',
    headers: displayHeaders(s.api_key, signed(key, at + 4)),
    body: '{"logs":[{"message":"x"}]}',
  })
  t.equal(logSigned.status, 204)
})
