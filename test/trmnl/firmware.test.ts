// Conformance with TRMNL's firmware (issue 31): for each model (og, x, a DIY board) and firmware
// band (1.5.1: BMP only; 1.6.5: PNG; 1.8.14: PNG, 1-bit palette files inverted), the service's
// real answers decoded the way the firmware decodes them (firmware-model.ts): JSON field types,
// the picture drawn upright at the panel's size, every error body a safe refresh, and the cache
// keeping a playlist's files.
import sharp from 'sharp'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { FIRMWARE_TEXT_BAND, qrBox } from '../../src/trmnl/screens.js'
import {
  BOARDS,
  type Board,
  draw,
  FIRMWARE_BANDS,
  FirmwareCache,
  handleDisplay,
  parseSetup,
  safeRefresh,
  setupImageKept,
} from './firmware-model.js'
import { appFetch } from '../helpers/app-fetch.js'

let now = Date.parse('2026-06-01T12:00:00Z')
const clock = () => new Date(now)
let macs = 0x10
const nextMac = () =>
  `A0:B7:65:1C:${(macs >> 8).toString(16).padStart(2, '0')}:${(macs++ & 0xff).toString(16).padStart(2, '0')}`.toUpperCase()

/** The headers the firmware sends with /api/display (src/api-client/display.cpp). */
const displayHeaders = (board: Board, firmware: string, mac: string, token: string) => ({
  ID: mac,
  'Access-Token': token,
  'Refresh-Rate': '900',
  'Battery-Voltage': '3.9',
  'FW-Version': firmware,
  Model: board.model,
  RSSI: '-60',
  Width: String(board.width),
  Height: String(board.height),
})

async function call(url: string, headers: Record<string, string> = {}, init: RequestInit = {}) {
  const res = await appFetch(url, { ...init, headers })
  return { status: res.status, text: await res.text(), headers: res.headers }
}

async function download(url: string, headers: Record<string, string>) {
  const res = await appFetch(url, { headers })
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', bytes: Buffer.from(await res.arrayBuffer()) }
}

/** A picture black in its top half, white below: upright when drawn so. */
async function halfBlack(width: number, height: number): Promise<Buffer> {
  const top = await sharp({ create: { width, height: Math.floor(height / 2), channels: 3, background: '#000' } })
    .png()
    .toBuffer()
  return sharp({ create: { width, height, channels: 3, background: '#fff' } })
    .composite([{ input: top, top: 0, left: 0 }])
    .png()
    .toBuffer()
}

async function uploadKey(svc: TestApp, token: string, png: Buffer): Promise<string> {
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'p.png')
  const res = await appFetch(`${svc.url}/api/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })
  return (await res.json()).key
}

/** The mean grey of rows [from, to) of a drawing. */
function meanGrey(d: { width: number; grey: Uint8Array }, from: number, to: number): number {
  let sum = 0
  for (let i = from * d.width; i < to * d.width; i++) sum += d.grey[i]!
  return sum / ((to - from) * d.width)
}

t.test('every model and firmware band: setup, the paired screen and a picture drawn upright at the panel size', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('firmware'))
  for (const board of Object.values(BOARDS)) {
    for (const firmware of FIRMWARE_BANDS) {
      // The X shipped with firmware after 1.5.1.
      if (board.fastEpd && firmware === '1.5.1') continue
      const label = `${board.model} ${firmware}`
      const mac = nextMac()
      // /api/setup carries no size: the model says it.
      const s = await call(`${svc.url}/api/setup`, { ID: mac, 'FW-Version': firmware, Model: board.model })
      const setup = parseSetup(s.status, s.text)
      if (!setup.ok) {
        t.fail(`${label}: setup refused (${setup.status})`)
        continue
      }
      const setupImage = await download(setup.image_url, {})
      t.ok(setupImageKept(setupImage.bytes), `${label}: the setup image is one device_setup.cpp keeps`)
      const drawnSetup = draw(board, firmware, setupImage.bytes, setupImage.contentType)
      t.same([drawnSetup.width, drawnSetup.height], [board.width, board.height], `${label}: the setup screen at the panel size`)

      const claimed = await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: setup.friendly_id, name: label } })
      t.equal(claimed.status, 200, `${label}: claimed`)
      const deviceId = claimed.body.device.id as string
      const headers = displayHeaders(board, firmware, mac, setup.api_key)

      const first = await call(`${svc.url}/api/display`, headers)
      const outcome = handleDisplay(first.status, first.text)
      if (outcome.kind !== 'show') {
        t.fail(`${label}: the paired answer is not shown (${outcome.kind})`)
        continue
      }
      t.notOk(safeRefresh(outcome), `${label}: a safe refresh (${outcome.refresh} s)`)
      t.equal(outcome.response.special_function, 'identify', `${label}: special_function as the firmware reads it`)
      t.ok(outcome.response.image_url_timeout > 0 && outcome.response.image_url_timeout <= 65, `${label}: image_url_timeout in seconds`)
      const paired = await download(outcome.response.image_url, headers)
      const drawnPaired = draw(board, firmware, paired.bytes, paired.contentType)
      t.same(
        [drawnPaired.width, drawnPaired.height, drawnPaired.rotated],
        [board.width, board.height, false],
        `${label}: the paired screen`,
      )

      // A picture sent from the app, drawn the firmware's way.
      const key = await uploadKey(svc, token, await halfBlack(board.width, board.height))
      t.equal((await jsonCall(svc.url, '/api/upload/send', { token, body: { key, deviceId } })).status, 200)
      const shows = handleDisplay(...(Object.values(await call(`${svc.url}/api/display`, headers)).slice(0, 2) as [number, string]))
      if (shows.kind !== 'show') {
        t.fail(`${label}: the picture's answer is not shown`)
        continue
      }
      const file = await download(shows.response.image_url, headers)
      t.equal(file.status, 200)
      let drawn: ReturnType<typeof draw>
      try {
        drawn = draw(board, firmware, file.bytes, file.contentType)
      } catch (err) {
        t.fail(`${label}: refused by the firmware: ${(err as Error).message}`)
        continue
      }
      t.same([drawn.width, drawn.height, drawn.rotated], [board.width, board.height, false], `${label}: at the panel size, not rotated`)
      const top = meanGrey(drawn, 0, Math.floor(board.height / 4))
      const bottom = meanGrey(drawn, Math.ceil((board.height * 3) / 4), board.height)
      t.ok(top < 20 && bottom > 235, `${label}: upright, not a negative (top ${top.toFixed(0)}, bottom ${bottom.toFixed(0)})`)
      t.equal(file.contentType === 'image/png', firmware !== '1.5.1', `${label}: BMP before 1.5.2, PNG from then on`)
    }
  }
})

t.test('an X paired before the service knew its model takes its own size from its headers', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('x-size'))
  const mac = nextMac()
  // An unknown model at setup: the default 800×480 panel.
  const s = parseSetup(
    ...(Object.values(await call(`${svc.url}/api/setup`, { ID: mac, 'FW-Version': '1.8.14', Model: 'x-proto' })).slice(0, 2) as [
      number,
      string,
    ]),
  )
  if (!s.ok) throw new Error('setup')
  const claimed = await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: s.friendly_id, name: 'X' } })
  t.match(claimed.body.device.display, { width: 800, height: 480 })
  const x = BOARDS.x
  const headers = { ...displayHeaders(x, '1.8.14', mac, s.api_key), Model: 'x-proto' }
  const answer = handleDisplay(...(Object.values(await call(`${svc.url}/api/display`, headers)).slice(0, 2) as [number, string]))
  if (answer.kind !== 'show') throw new Error(answer.kind)
  const file = await download(answer.response.image_url, headers)
  const drawn = draw(x, '1.8.14', file.bytes, file.contentType)
  t.same([drawn.width, drawn.height], [1872, 1404], 'the paired screen at its own size')
  t.match((await jsonCall(svc.url, `/api/device/${claimed.body.device.id}`, { token })).body.display, { width: 1872, height: 1404 })
})

t.test('every error of /api/setup, /api/display and /api/log parses to a safe refresh', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0', RATE_LIMIT_MAX: '8' } })
  const board = BOARDS.og
  const mac = nextMac()
  const bodies: Array<{ what: string; status: number; text: string; retryAfter: number }> = []
  const keep = (what: string, r: { status: number; text: string; headers: Headers }) =>
    bodies.push({ what, status: r.status, text: r.text, retryAfter: Number(r.headers.get('retry-after') ?? 0) })

  keep('display, unknown token', await call(`${svc.url}/api/display`, displayHeaders(board, '1.8.14', mac, 'nope')))
  keep('setup, no MAC', await call(`${svc.url}/api/setup`, { 'FW-Version': '1.8.14', Model: 'og' }))
  keep(
    'log, unknown token',
    await call(
      `${svc.url}/api/log`,
      { ...displayHeaders(board, '1.8.14', mac, 'nope'), 'content-type': 'application/json' },
      { method: 'POST', body: '{"logs":[]}' },
    ),
  )
  // A 5xx: the service failing while it answers.
  const trmnl = svc.app.trmnl!
  const real = trmnl.authenticate
  trmnl.authenticate = async () => {
    throw new Error('the database went away')
  }
  keep('display, 500', await call(`${svc.url}/api/display`, displayHeaders(board, '1.8.14', mac, 'x')))
  trmnl.authenticate = real
  // The rate limit: 429 with Retry-After.
  for (let i = 0; i < 12; i++) {
    const r = await call(`${svc.url}/api/display`, displayHeaders(board, '1.8.14', mac, 'nope'))
    if (r.status === 429) {
      keep('display, 429', r)
      break
    }
  }
  t.ok(
    bodies.some((b) => b.status === 429),
    'the limit was reached',
  )
  t.ok(
    bodies.some((b) => b.status === 500),
    'a 5xx was answered',
  )
  for (const b of bodies) {
    const body = JSON.parse(b.text)
    t.type(body.message, 'string', `${b.what}: {message, code} for other clients`)
    t.type(body.code, 'string')
    // What the firmware does with it: display.cpp parses a 429's body; were any other parsed, the same holds.
    const asParsed = handleDisplay(200, b.text)
    t.equal(asParsed.kind, 'show', `${b.what}: a display answer`)
    t.notOk(safeRefresh(asParsed, b.status === 429 ? Math.max(60, b.retryAfter) : 60), `${b.what}: a safe refresh`)
    t.notOk(safeRefresh(handleDisplay(b.status, b.text)), `${b.what}: as the firmware handles HTTP ${b.status}`)
  }
})

t.test("a playlist's files stay in the firmware's cache, each downloaded once", async (t) => {
  now = Date.parse('2026-06-01T12:00:00Z')
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('cache'))
  const board = BOARDS.og
  const firmware = '1.8.14'
  const mac = nextMac()
  const s = parseSetup(
    ...(Object.values(await call(`${svc.url}/api/setup`, { ID: mac, 'FW-Version': firmware, Model: 'og' })).slice(0, 2) as [
      number,
      string,
    ]),
  )
  if (!s.ok) throw new Error('setup')
  const deviceId = (await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: s.friendly_id, name: 'Cache' } })).body.device
    .id
  const headers = displayHeaders(board, firmware, mac, s.api_key)
  await call(`${svc.url}/api/display`, headers)
  const items = []
  for (const colour of ['#000', '#fff', '#888']) {
    const png = await sharp({ create: { width: 80, height: 48, channels: 3, background: colour } })
      .png()
      .toBuffer()
    items.push({ kind: 'upload', key: await uploadKey(svc, token, png) })
  }
  const list = (await jsonCall(svc.url, '/api/playlists', { token, body: { name: 'Three', mode: 'sequential', itemSeconds: 600, items } }))
    .body
  const days = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
  const put = await jsonCall(svc.url, `/api/device/${deviceId}/schedule`, {
    token,
    method: 'PUT',
    body: { timeZone: 'UTC', rules: [{ playlistId: list.id, days, from: '00:00', to: '24:00' }], sleep: [] },
  })
  t.equal(put.status, 200, JSON.stringify(put.body))
  const cache = new FirmwareCache()
  const shown: string[] = []
  for (let turn = 0; turn < 7; turn++) {
    await svc.app.scheduler!.tick()
    const r = handleDisplay(...(Object.values(await call(`${svc.url}/api/display`, headers)).slice(0, 2) as [number, string]))
    if (r.kind !== 'show') throw new Error(r.kind)
    t.notOk(safeRefresh(r))
    const name = r.response.filename
    shown.push(name)
    if (!cache.has(name)) {
      const file = await download(r.response.image_url, headers)
      draw(board, firmware, file.bytes, file.contentType)
      cache.store(name, file.bytes, Math.floor(now / 1000))
    }
    now += r.refresh * 1000
  }
  t.equal(new Set(shown).size, 3, `three pictures in turn (${shown.join(', ')})`)
  t.equal(cache.downloads, 3, 'each downloaded once')
  t.equal(cache.files.size, 3, 'all three kept')
})

t.test('the firmware model refuses what the firmware refuses', async (t) => {
  const og = BOARDS.og
  // A 1-bit palette PNG, black first: firmware 1.8.14 draws it as a negative.
  const { encodeIndexedPng } = await import('../../src/images/png.js')
  const indices = new Uint8Array(16 * 16).fill(0)
  const palettePng = encodeIndexedPng(indices, 16, 16, [
    [0, 0, 0],
    [255, 255, 255],
  ])
  t.equal(draw(og, '1.8.14', palettePng, 'image/png').grey[0], 255, 'black drawn white on 1.8.14')
  t.equal(draw(og, '1.6.5', palettePng, 'image/png').grey[0], 0, 'and black on 1.6.5')
  t.throws(() => draw(og, '1.5.1', palettePng, 'image/png'), { name: 'Refused' }, 'no PNG before 1.5.2')
  const big = encodeIndexedPng(new Uint8Array(801 * 2), 801, 2, [
    [0, 0, 0],
    [255, 255, 255],
  ])
  t.throws(() => draw(og, '1.8.14', big, 'image/png'), { name: 'Refused' }, 'wider than the panel')
  t.ok(safeRefresh(handleDisplay(429, '{"message":"slow down","code":"TOO_MANY_REQUESTS"}')), 'a bare error body: refresh_rate 0')
  t.ok(safeRefresh(handleDisplay(200, '{"status":500}')), 'status 500: a reset')
})

t.test('the setup screen leaves the firmware its band and never puts the code over the QR code', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  for (const [board, firmware] of [
    [BOARDS.og, '1.8.14'],
    [BOARDS.og, '1.5.1'],
    [BOARDS.x, '1.8.14'],
  ] as const) {
    const label = `${board.model} ${firmware}`
    const s = parseSetup(
      ...(Object.values(await call(`${svc.url}/api/setup`, { ID: nextMac(), 'FW-Version': firmware, Model: board.model })).slice(0, 2) as [
        number,
        string,
      ]),
    )
    if (!s.ok) throw new Error('setup')
    const file = await download(s.image_url, {})
    const drawn = draw(board, firmware, file.bytes, file.contentType)
    const { width, height } = drawn
    const at = (x: number, y: number) => drawn.grey[y * width + x]!
    const band = Math.floor(height * (1 - FIRMWARE_TEXT_BAND))
    let inBand = 0
    for (let y = band; y < height; y++) for (let x = 0; x < width; x++) if (at(x, y) < 128) inBand++
    t.equal(inBand, 0, `${label}: nothing drawn where the firmware prints its own lines`)
    const qr = qrBox(width, height)
    t.ok(qr.y + qr.side <= band, `${label}: the QR code above that band`)
    let qrDark = 0
    for (let y = qr.y; y < qr.y + qr.side; y++) for (let x = qr.x; x < qr.x + qr.side; x++) if (at(x, y) < 128) qrDark++
    t.ok(qrDark > qr.side * qr.side * 0.2, `${label}: the QR code is drawn`)
    // Between the text column and the QR code: a white gap the text never crosses.
    let gapDark = 0
    for (let y = 0; y < band; y++) for (let x = qr.x - Math.round(width * 0.02); x < qr.x; x++) if (at(x, y) < 128) gapDark++
    t.equal(gapDark, 0, `${label}: the code and the text stay left of the QR code`)
    let textDark = 0
    for (let y = 0; y < band; y++) for (let x = 0; x < qr.x - Math.round(width * 0.02); x++) if (at(x, y) < 128) textDark++
    t.ok(textDark > 0, `${label}: the code is drawn`)
  }
})
