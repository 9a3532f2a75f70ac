// The TRMNL display answer's rules without the app: which file a frame is sent and under which
// name, how long it is told to wait, what a command or a double press changes, what a firmware
// offer and a rotation add, and the answers to a frame still pairing or gone. test/trmnl/
// protocol.test.ts drives the same answers through a booted app and a polling frame.
import t from 'tap'
import { cacheName } from '../../src/trmnl/files.js'
import {
  batteryPercent,
  type DisplayLinks,
  formatsFor,
  imageName,
  imageTimeout,
  MIN_REFRESH_SECONDS,
  type PairedDisplayInput,
  PLAYLIST_MAX_FILES,
  pairedAnswer,
  pairingStage,
  refreshFor,
  resetAnswer,
  SPECIAL_FUNCTION,
  screenName,
  waitingAnswer,
} from '../../src/trmnl/display-rules.js'
import { panelFor } from '../../src/trmnl/panels.js'

const og = panelFor({ model: 'og' })
const x = panelFor({ model: 'x' })
const png1 = formatsFor(og, '1.6.0')
const now = new Date('2026-11-28T10:00:00Z')
const later = (seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString()

/** Links that say what they point at, so an answer's choice of file reads plainly. */
const links: DisplayLinks = {
  image: (deviceId, imageId, format) => `image:${deviceId}/${imageId}/${format}`,
  screen: (kind, deviceId, format) => `screen:${kind}/${deviceId}/${format}`,
}

const sha = (n: number) => n.toString(16).padStart(64, '0')

function input(over: Partial<PairedDisplayInput> = {}): PairedDisplayInput {
  return {
    now,
    device: { id: 'dev1', name: 'Kitchen', desiredImageId: 'img1', display: { width: 800, height: 480 } },
    panel: og,
    formats: png1,
    refresh: 900,
    variant: { sha256: sha(1), width: 800, height: 480 },
    specialFunction: false,
    command: undefined,
    offer: undefined,
    rotation: undefined,
    ...over,
  }
}

const command = (name: string, args: Record<string, unknown> = {}) => ({ id: 'cmd1', command: name, args })

t.test('battery: the board’s own percentage first, else the LiPo voltage from 3.0 V to 4.2 V; 0 V is unknown', async (t) => {
  t.equal(batteryPercent({ percentCharged: 42, batteryVoltage: 4.2 }), 42)
  t.equal(batteryPercent({ batteryVoltage: 0 }), undefined, 'a board on USB without a battery reading')
  t.equal(batteryPercent({}), undefined)
  t.equal(batteryPercent({ batteryVoltage: 3.0 }), 0)
  t.equal(batteryPercent({ batteryVoltage: 3.6 }), 50)
  t.equal(batteryPercent({ batteryVoltage: 4.2 }), 100)
  t.equal(batteryPercent({ batteryVoltage: 2.5 }), 0, 'below empty is empty')
  t.equal(batteryPercent({ batteryVoltage: 4.4 }), 100, 'above full is full')
  t.equal(batteryPercent({ batteryVoltage: 3.71 }), 59.2, 'to a tenth of a percent')
})

t.test('formats: BMP before 1.5.2 on an 800×480 1-bit panel, a 2-bit PNG on a 4-grey panel, else a 1-bit PNG', async (t) => {
  t.same(formatsFor(og, '1.5.1'), { variant: 'bmp1', screen: 'bmp1' })
  t.same(formatsFor(og, undefined), { variant: 'bmp1', screen: 'bmp1' }, 'no version said: the BMP every firmware draws')
  t.same(formatsFor(og, '1.5.2'), { variant: 'png1', screen: 'png1' })
  t.same(formatsFor(x, '1.6.6'), { variant: 'png-gray4', screen: 'png2' })
  t.same(formatsFor(x, '1.5.1'), { variant: 'png-gray4', screen: 'png2' }, 'the X draws no BMP, whatever its version')
  const odd = panelFor({ model: 'og', width: 640, height: 400 })
  t.same(formatsFor(odd, '1.5.1'), { variant: 'png1', screen: 'png1' }, 'only an 800×480 file passes the BMP check')
})

t.test('image_url_timeout: 30 s, 60 s for panels over a million pixels', async (t) => {
  t.equal(imageTimeout({ width: 800, height: 480 }), 30)
  t.equal(imageTimeout({ width: 1000, height: 1000 }), 30, 'a million exactly is not over')
  t.equal(imageTimeout({ width: 1000, height: 1001 }), 60)
  t.equal(imageTimeout(x), 60)
})

t.test('pairing stage: pending and expired keep pairing, approved and active are paired, the rest reset the frame', async (t) => {
  t.equal(pairingStage('pending'), 'pairing')
  t.equal(pairingStage('expired'), 'pairing')
  t.equal(pairingStage('approved'), 'paired')
  t.equal(pairingStage('active'), 'paired')
  t.equal(pairingStage('denied'), 'gone')
  t.equal(pairingStage('disconnected'), 'gone')
  t.equal(pairingStage(undefined), 'gone', 'deleted')
})

t.test('refresh: the service’s rate, shortened to the next change, stretched over sleep, never under a minute', async (t) => {
  const plan = (p: { sleepingUntil?: string | null; nextChangeAt?: string | null }) => ({
    sleepingUntil: p.sleepingUntil ?? null,
    nextChangeAt: p.nextChangeAt ?? null,
  })
  t.equal(refreshFor(null, now, 900), 900, 'no schedule')
  t.equal(refreshFor(null, now, 10), MIN_REFRESH_SECONDS, 'a rate under a minute is raised')
  t.equal(refreshFor(plan({ nextChangeAt: later(120) }), now, 900), 120, 'woken for the next turn')
  t.equal(refreshFor(plan({ nextChangeAt: later(120.2) }), now, 900), 121, 'rounded up: never woken before the change')
  t.equal(refreshFor(plan({ nextChangeAt: later(30) }), now, 900), MIN_REFRESH_SECONDS, 'a change in 30 s: still a minute')
  t.equal(refreshFor(plan({ nextChangeAt: later(3600) }), now, 900), 900, 'a later change does not stretch the rate')
  t.equal(refreshFor(plan({ nextChangeAt: later(-60) }), now, 900), 900, 'a change already past is ignored')
  t.equal(refreshFor(plan({ sleepingUntil: later(8 * 3600), nextChangeAt: later(120) }), now, 900), 8 * 3600, 'sleep wins')
  t.equal(refreshFor(plan({ sleepingUntil: later(10 * 86_400) }), now, 900), 7 * 86_400, 'at most a week')
  t.equal(refreshFor(plan({ sleepingUntil: later(10) }), now, 900), MIN_REFRESH_SECONDS)
  t.equal(refreshFor(plan({ sleepingUntil: later(0) }), now, 900), 900, 'a sleep ending now is over')
  // The same plan later in time: the clock is what the answer depends on.
  t.equal(refreshFor(plan({ nextChangeAt: later(600) }), new Date(now.getTime() + 300_000), 900), 300)
})

t.test('a frame not claimed yet gets its setup screen with its code; one gone is told to reset', async (t) => {
  const waiting = waitingAnswer({ deviceId: 'dev1', friendlyId: 'ABC123' }, og, 'png1', 900, now, links)
  t.match(waiting, {
    status: 202,
    image_url: 'screen:setup/dev1/png1',
    filename: screenName('setup', 'dev1', 'ABC123', og, 'png1', now),
    refresh_rate: 900,
    friendly_id: 'ABC123',
    reset_firmware: false,
    update_firmware: false,
    special_function: SPECIAL_FUNCTION,
    image_url_timeout: 30,
  })
  t.same(resetAnswer(300), {
    status: 0,
    image_url: null,
    filename: null,
    refresh_rate: 300,
    update_firmware: false,
    firmware_url: null,
    reset_firmware: true,
    special_function: SPECIAL_FUNCTION,
    image_url_timeout: 30,
  })
})

t.test('the desired image when a variant of the panel’s size exists, named by its bytes; else the paired screen', async (t) => {
  const shown = pairedAnswer(input(), links)
  t.match(shown.answer, {
    status: 0,
    image_url: 'image:dev1/img1/png1',
    filename: imageName(sha(1), 'png1', now),
    refresh_rate: 900,
    playlist: [imageName(sha(1), 'png1', now)],
    reset_firmware: false,
    special_function: SPECIAL_FUNCTION,
  })
  t.notOk('action' in shown.answer, 'no action without a double press')
  t.equal(shown.carriedImage, 'img1', 'the answer delivers the image it names')
  t.equal(shown.commandResult, undefined)

  const other = pairedAnswer(input({ variant: { sha256: sha(1), width: 1872, height: 1404 } }), links)
  t.equal(other.answer.image_url, 'screen:paired/dev1/png1', 'a variant of another size is never sent')
  t.equal(other.answer.filename, screenName('paired', 'dev1', 'Kitchen', og, 'png1', now))
  t.equal(other.carriedImage, undefined, 'a screen delivers no image')

  const none = pairedAnswer(input({ device: { ...input().device, desiredImageId: null }, variant: undefined }), links)
  t.equal(none.answer.image_url, 'screen:paired/dev1/png1')
  t.equal(none.carriedImage, undefined)

  const noVariant = pairedAnswer(input({ variant: undefined }), links)
  t.equal(noVariant.answer.image_url, 'screen:paired/dev1/png1', 'an image not converted for the frame yet')

  const onX = pairedAnswer(
    input({
      panel: x,
      formats: formatsFor(x, '1.6.6'),
      device: { ...input().device, display: { width: 1872, height: 1404 } },
      variant: { sha256: sha(2), width: 1872, height: 1404 },
    }),
    links,
  )
  t.match(onX.answer, { image_url: 'image:dev1/img1/png-gray4', filename: imageName(sha(2), 'png-gray4', now), image_url_timeout: 60 })
})

t.test('file names stay the same within the cache window and change with the bytes and across windows', async (t) => {
  const a = pairedAnswer(input(), links).answer.filename
  t.equal(pairedAnswer(input({ now: new Date(now.getTime() + 60_000) }), links).answer.filename, a, 'a minute later: cached')
  t.not(pairedAnswer(input({ variant: { sha256: sha(9), width: 800, height: 480 } }), links).answer.filename, a, 'new bytes')
  t.not(pairedAnswer(input({ now: new Date(now.getTime() + 13 * 3600_000) }), links).answer.filename, a, 'thirteen hours later')
})

t.test('a double press shows the identify screen and says so; it delivers no image', async (t) => {
  const d = pairedAnswer(input({ specialFunction: true }), links)
  t.equal(d.answer.image_url, 'screen:identify/dev1/png1')
  t.equal(d.answer.filename, screenName('identify', 'dev1', 'Kitchen', og, 'png1', now))
  t.equal(d.answer.action, SPECIAL_FUNCTION)
  t.equal(d.carriedImage, undefined)
})

t.test('commands: identify and refresh as polling firmware can, sleep within a minute and a day, the rest refused', async (t) => {
  const identify = pairedAnswer(input({ command: command('identify') }), links)
  t.equal(identify.answer.image_url, 'screen:identify/dev1/png1')
  t.notOk('action' in identify.answer, 'a command is no double press')
  t.same(identify.commandResult, { ok: true, delivered: 'display' })
  t.equal(identify.carriedImage, undefined)

  const cached = imageName(sha(1), 'png1', now)
  const refresh = pairedAnswer(input({ command: command('refresh') }), links)
  t.equal(refresh.answer.image_url, 'image:dev1/img1/png1', 'the same image')
  t.not(refresh.answer.filename, cached, 'under a name the frame has not cached')
  t.equal(refresh.answer.filename?.slice(0, 13), cached.slice(0, 13), 'with the same first 13 characters, so the old file goes')
  t.same(refresh.commandResult, { ok: true, delivered: 'display' })
  t.equal(refresh.carriedImage, 'img1')
  const screenRefresh = pairedAnswer(input({ variant: undefined, command: command('refresh') }), links)
  const screenCached = screenName('paired', 'dev1', 'Kitchen', og, 'png1', now)
  t.not(screenRefresh.answer.filename, screenCached, 'a screen is drawn again too')
  t.equal(screenRefresh.answer.filename?.slice(0, 13), screenCached.slice(0, 13))
  // At the first second of a cache window, a fresh name must still differ from the window's.
  const windowStart = new Date(Math.floor(now.getTime() / 43_200_000) * 43_200_000)
  const atStart = pairedAnswer(input({ now: windowStart, command: command('refresh') }), links)
  t.not(atStart.answer.filename, cacheName(`image|${sha(1)}|png1`, windowStart))

  const sleep = (seconds: unknown) => pairedAnswer(input({ command: command('sleep', { seconds }) }), links)
  t.equal(sleep(3600).answer.refresh_rate, 3600)
  t.same(sleep(3600).commandResult, { ok: true, delivered: 'display', seconds: 3600 })
  t.equal(sleep(10).answer.refresh_rate, MIN_REFRESH_SECONDS, 'at least a minute')
  t.equal(sleep(1_000_000).answer.refresh_rate, 86_400, 'at most a day')
  t.equal(sleep(86_400).answer.refresh_rate, 86_400)
  t.equal(sleep(1.5).answer.refresh_rate, 900, 'seconds must be whole')
  t.match(sleep('60').commandResult, { ok: false }, 'a string is not a number of seconds')

  const reboot = pairedAnswer(input({ command: command('reboot') }), links)
  t.same(reboot.commandResult, {
    ok: false,
    error: 'reboot is not available on TRMNL firmware (it polls, and restarts only by itself)',
  })
  t.equal(reboot.answer.image_url, 'image:dev1/img1/png1', 'a refused command changes nothing')
  t.equal(reboot.answer.refresh_rate, 900)
})

t.test('a firmware offer with a version is offered and delivered by the answer; none, or a cleared one, is not', async (t) => {
  const offer = {
    releaseId: 'r1',
    model: 'og',
    version: '1.7.0',
    url: 'https://example.test/fw.bin',
    urlExpiresAt: later(3600),
    sha256: sha(3),
    size: 1000,
    signature: 'sig',
  }
  const offered = pairedAnswer(input({ offer }), links)
  t.match(offered.answer, { update_firmware: true, firmware_url: 'https://example.test/fw.bin' })
  t.equal(offered.carriedFirmware, true)
  for (const none of [undefined, null, { version: null }] as const) {
    const d = pairedAnswer(input({ offer: none }), links)
    t.match(d.answer, { update_firmware: false, firmware_url: null }, JSON.stringify(none))
    t.equal(d.carriedFirmware, false)
  }
})

t.test('playlist: the shown file first, then the rotation’s images of the device’s size, once each, at most 50', async (t) => {
  const v = (id: string, n: number, width = 800, height = 480) => ({ imageId: id, sha256: sha(n), width, height })
  const d = pairedAnswer(
    input({
      rotation: {
        imageIds: ['img2', 'img1', 'img3', 'img2', 'img4', 'img5'],
        variants: [v('img1', 1), v('img2', 2), v('img3', 3, 1872, 1404), v('img5', 5)],
      },
    }),
    links,
  )
  t.same(d.answer.playlist, [imageName(sha(1), 'png1', now), imageName(sha(2), 'png1', now), imageName(sha(5), 'png1', now)])
  const many = Array.from({ length: 80 }, (_, i) => `many${i}`)
  const long = pairedAnswer(input({ rotation: { imageIds: many, variants: many.map((id, i) => v(id, 100 + i)) } }), links)
  t.equal(long.answer.playlist?.length, PLAYLIST_MAX_FILES)
  t.equal(long.answer.playlist?.[0], imageName(sha(1), 'png1', now), 'the file shown now stays first')
})
