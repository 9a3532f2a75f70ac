// What TRMNL's firmware does with the service's answers, modelled from its source
// (usetrmnl/trmnl-firmware; written from reading it, none of it copied):
//
// - /api/display: src/api-client/display.cpp parses the body of a 200, 301 or 429 only, with
//   lib/trmnl/src/parse_response_api_display.cpp (ArduinoJson into fixed-type fields: a missing
//   or non-number refresh_rate is 0, a string status is 0); src/bl.cpp handleApiDisplayResponse
//   then acts on `status`: 0 shows image_url and sleeps refresh_rate seconds (0: wakes at once),
//   202 polls fast, 500 resets (forgets the Wi-Fi); reset_firmware resets too.
// - /api/setup: src/api-client/setup.cpp parses a 200 only (parse_response_api_setup.cpp: status
//   must be 200); src/services/device_setup.cpp keeps the setup image when it is exactly 48,062
//   bytes (DISPLAY_BMP_IMAGE_SIZE) or a PNG.
// - Pictures: bl.cpp takes a download as PNG when its Content-Type is image/png, as BMP when it
//   starts with "BM". BMP (lib/trmnl/src/bmp.cpp parseBMPHeader): 800×480, 1 bit, image data size
//   48,000, 2 palette entries, pixel data after byte 54; display.cpp then flips the rows with the
//   panel's size (bottom-up files) and writes the bits as they are (1 white). PNG (display.cpp
//   png_to_epd): refused when larger than the panel (a portrait file of the panel's size is
//   rotated), or deeper than the board draws (2 bits with bb_epaper, 8 on the X); png_draw
//   (bb_epaper) writes greyscale bits as they are and, for a 1-bit palette file, inverts them when
//   the first palette entry is the darker one (firmware 1.6.6 on); the X (FastEPD) copies the
//   bits, palette or not. PNG came with 1.5.2.
// - Cache: src/filesystem.cpp (see FirmwareCache).
import zlib from 'node:zlib'
import semver from 'semver'

export type Board = { model: string; width: number; height: number; maxPngBits: number; fastEpd: boolean }

export const BOARDS: Record<'og' | 'x' | 'diy', Board> = {
  og: { model: 'og', width: 800, height: 480, maxPngBits: 2, fastEpd: false },
  x: { model: 'x', width: 1872, height: 1404, maxPngBits: 8, fastEpd: true },
  // A DIY board of config.h (a Waveshare ESP32 driver board with a 7.5" panel).
  diy: { model: 'waveshare', width: 800, height: 480, maxPngBits: 2, fastEpd: false },
}

/** The firmware versions that behave differently: BMP only; PNG; PNG with 1-bit palette inversion. */
export const FIRMWARE_BANDS = ['1.5.1', '1.6.5', '1.8.14'] as const

// ---- JSON, as ArduinoJson reads it into the firmware's fields --------------------------------

const asInt = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : 0)
/** uint32_t / uint64_t fields: a negative number wraps around. */
const asUint = (v: unknown) => asInt(v) >>> 0
const asBool = (v: unknown) => (typeof v === 'boolean' ? v : typeof v === 'number' ? v !== 0 : false)
const asString = (v: unknown) => (typeof v === 'string' ? v : '')

type DisplayResponse = {
  status: number
  image_url: string
  image_url_timeout: number
  filename: string
  update_firmware: boolean
  firmware_url: string
  refresh_rate: number
  reset_firmware: boolean
  special_function: string
  playlist: string[]
}

/** parse_response_api_display.cpp; undefined for a body that is not JSON (a parsing error: the retry path). */
function parseDisplay(body: string): DisplayResponse | undefined {
  let doc: unknown
  try {
    doc = JSON.parse(body)
  } catch {
    return undefined
  }
  const d = (doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {}) as Record<string, unknown>
  const sf = asString(d.special_function)
  return {
    status: asInt(d.status),
    image_url: asString(d.image_url),
    image_url_timeout: asUint(d.image_url_timeout),
    filename: asString(d.filename),
    update_firmware: asBool(d.update_firmware),
    firmware_url: asString(d.firmware_url),
    refresh_rate: asUint(d.refresh_rate),
    reset_firmware: asBool(d.reset_firmware),
    special_function: ['none', 'identify', 'sleep', 'add_wifi', 'restart_playlist', 'rewind', 'send_to_me', 'guest_mode'].includes(sf)
      ? sf
      : 'none',
    playlist: Array.isArray(d.playlist) ? d.playlist.map((e) => (typeof e === 'string' ? e : String(e))) : [],
  }
}

/** What a frame does after an answer to /api/display. */
export type DisplayOutcome =
  | { kind: 'retry'; why: string } // not parsed: an error screen, then 15, 30, 60 s, then 15 min (refresh_interval.cpp applyApiRetry)
  | { kind: 'show'; refresh: number; response: DisplayResponse }
  | { kind: 'fast-poll' } // 202: waiting to be claimed
  | { kind: 'reset' } // forgets its token and its Wi-Fi (bl.cpp resetDeviceCredentials)
  | { kind: 'ignored' } // another status: nothing changes, the refresh it had

export function handleDisplay(httpStatus: number, body: string): DisplayOutcome {
  if (![200, 301, 429].includes(httpStatus)) return { kind: 'retry', why: `HTTP ${httpStatus}` }
  const r = parseDisplay(body)
  if (!r) return { kind: 'retry', why: 'not JSON' }
  if (r.status === 500) return { kind: 'reset' }
  if (r.status === 202) return { kind: 'fast-poll' }
  if (r.status !== 0) return { kind: 'ignored' }
  if (r.reset_firmware) return { kind: 'reset' }
  return { kind: 'show', refresh: r.refresh_rate, response: r }
}

/** A safe answer: never a reset, never a wake-up sooner than a minute (or the limit's own wait). */
export function safeRefresh(outcome: DisplayOutcome, atLeast = 60): string | undefined {
  if (outcome.kind === 'reset') return 'the frame would forget its Wi-Fi'
  if (outcome.kind === 'show' && outcome.refresh < atLeast) return `refresh_rate ${outcome.refresh} s: it would wake again at once`
  return undefined
}

/** parse_response_api_setup.cpp, after setup.cpp's HTTP check. */
export function parseSetup(httpStatus: number, body: string) {
  if (httpStatus !== 200) return { ok: false as const, status: httpStatus }
  const d = JSON.parse(body) as Record<string, unknown>
  const status = asInt(d.status)
  if (status !== 200) return { ok: false as const, status }
  return { ok: true as const, api_key: asString(d.api_key), friendly_id: asString(d.friendly_id), image_url: asString(d.image_url) }
}

/** device_setup.cpp downloadSetupImage: what it keeps. */
export function setupImageKept(bytes: Buffer): boolean {
  return bytes.length === 48_062 || (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x89504e47)
}

// ---- Pictures --------------------------------------------------------------------------------

/** What the panel shows: one grey (0 black … 255 white) per pixel, top row first. */
export type Drawn = { width: number; height: number; grey: Uint8Array; rotated: boolean }

class Refused extends Error {
  override name = 'Refused'
}

/** A download as the frame draws it (bl.cpp, display.cpp, bmp.cpp). */
export function draw(board: Board, firmware: string, bytes: Buffer, contentType: string): Drawn {
  const isPng = contentType === 'image/png' && !(bytes[0] === 0x42 && bytes[1] === 0x4d)
  if (isPng) {
    if (semver.lt(firmware, '1.5.2')) throw new Refused('PNG on firmware before 1.5.2')
    return drawPng(board, firmware, bytes)
  }
  return drawBmp(board, bytes)
}

function drawBmp(board: Board, bmp: Buffer): Drawn {
  if (bmp.length < 62 || bmp[0] !== 0x42 || bmp[1] !== 0x4d) throw new Refused('not a BMP')
  const width = bmp.readInt32LE(18)
  const height = bmp.readInt32LE(22)
  if (
    width !== 800 ||
    Math.abs(height) !== 480 ||
    bmp.readUInt16LE(28) !== 1 ||
    bmp.readUInt32LE(34) !== 48_000 ||
    bmp.readUInt32LE(46) !== 2
  )
    throw new Refused('BMP_BAD_SIZE')
  if (bmp.readUInt32LE(10) <= 54) throw new Refused('BMP_INVALID_OFFSET')
  // display.cpp flips rows with the panel's size from byte 62: another panel would be written past its buffer.
  if (board.width !== 800 || board.height !== 480) throw new Refused(`a BMP flipped as ${board.width}×${board.height}: past the buffer`)
  if (bmp.length < 62 + 48_000) throw new Refused('short BMP')
  const grey = new Uint8Array(800 * 480)
  for (let y = 0; y < 480; y++) {
    // Always flipped: the file's first row is drawn at the bottom.
    const row = 62 + (479 - y) * 100
    for (let x = 0; x < 800; x++) grey[y * 800 + x] = (bmp[row + (x >> 3)]! >> (7 - (x & 7))) & 1 ? 255 : 0
  }
  return { width: 800, height: 480, grey, rotated: false }
}

type Png = { width: number; height: number; bitDepth: number; colourType: number; palette: Buffer; raw: Buffer }

function readPng(png: Buffer): Png {
  if (png.length < 33 || png.readUInt32BE(0) !== 0x89504e47) throw new Refused('PNG_WRONG_FORMAT')
  let off = 8
  let ihdr: Buffer | undefined
  let palette = Buffer.alloc(0)
  const idat: Buffer[] = []
  while (off + 8 <= png.length) {
    const len = png.readUInt32BE(off)
    const type = png.toString('latin1', off + 4, off + 8)
    const data = png.subarray(off + 8, off + 8 + len)
    if (type === 'IHDR') ihdr = data
    else if (type === 'PLTE') palette = Buffer.from(data)
    else if (type === 'IDAT') idat.push(data)
    else if (type === 'IEND') break
    off += 12 + len
  }
  if (!ihdr) throw new Refused('no IHDR')
  return {
    width: ihdr.readUInt32BE(0),
    height: ihdr.readUInt32BE(4),
    bitDepth: ihdr[8]!,
    colourType: ihdr[9]!,
    palette,
    raw: zlib.inflateSync(Buffer.concat(idat)),
  }
}

/** The samples per pixel of a colour type (greyscale, RGB, palette, grey + alpha, RGBA). */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }

/** Unfiltered scanlines (the five PNG filters), without their filter bytes. */
function unfilter(p: Png): Buffer[] {
  const bpp = Math.max(1, ((CHANNELS[p.colourType] ?? 1) * p.bitDepth) >> 3)
  const rowBytes = Math.ceil((p.width * (CHANNELS[p.colourType] ?? 1) * p.bitDepth) / 8)
  const rows: Buffer[] = []
  let prev = Buffer.alloc(rowBytes)
  for (let y = 0; y < p.height; y++) {
    const start = y * (rowBytes + 1)
    const filter = p.raw[start]!
    const row = Buffer.from(p.raw.subarray(start + 1, start + 1 + rowBytes))
    for (let i = 0; i < rowBytes; i++) {
      const a = i >= bpp ? row[i - bpp]! : 0
      const b = prev[i]!
      const c = i >= bpp ? prev[i - bpp]! : 0
      const add = filter === 1 ? a : filter === 2 ? b : filter === 3 ? (a + b) >> 1 : filter === 4 ? paeth(a, b, c) : 0
      row[i] = (row[i]! + add) & 0xff
    }
    rows.push(row)
    prev = row
  }
  return rows
}

function paeth(a: number, b: number, c: number) {
  const p = a + b - c
  const pa = Math.abs(p - a)
  const pb = Math.abs(p - b)
  const pc = Math.abs(p - c)
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c
}

/** The palette entry's grey as png_draw weighs it for its darker-first test (R + 4G + B). */
const weighted = (pal: Buffer, i: number) => pal[i * 3]! + (pal[i * 3 + 1]! << 2) + pal[i * 3 + 2]!
/** The grey of a palette entry as ReduceBpp computes it. */
const paletteGrey = (pal: Buffer, i: number) => (pal[i * 3]! + pal[i * 3 + 1]! * 2 + pal[i * 3 + 2]!) >> 2

function drawPng(board: Board, firmware: string, bytes: Buffer): Drawn {
  const p = readPng(bytes)
  const rotated = p.width === board.height && p.height === board.width && p.width !== p.height
  if (!rotated && (p.width > board.width || p.height > board.height))
    throw new Refused(`PNG ${p.width}×${p.height} is larger than the panel`)
  // PNGdec's bits per pixel: the bit depth times the samples.
  const bpp = p.bitDepth * (CHANNELS[p.colourType] ?? 1)
  if (bpp > board.maxPngBits) throw new Refused(`PNG of ${bpp} bits per pixel: this board draws ${board.maxPngBits} at most`)
  const rows = unfilter(p)
  const sample = (row: Buffer, x: number) => {
    const d = p.bitDepth
    if (d === 8) return row[x]!
    const perByte = 8 / d
    return (row[Math.floor(x / perByte)]! >> ((perByte - 1 - (x % perByte)) * d)) & ((1 << d) - 1)
  }
  const max = (1 << p.bitDepth) - 1
  const inverts1Bit =
    !board.fastEpd &&
    p.colourType === 3 &&
    p.bitDepth === 1 &&
    semver.gte(firmware, '1.6.6') &&
    weighted(p.palette, 0) < weighted(p.palette, 1)
  const grey = new Uint8Array(p.width * p.height)
  for (let y = 0; y < p.height; y++) {
    const row = rows[y]!
    for (let x = 0; x < p.width; x++) {
      const v = sample(row, x)
      let g: number
      if (board.fastEpd || p.colourType === 0) {
        // The bits as they are: FastEPD copies them, bb_epaper writes greyscale as it is.
        g = Math.round((v * 255) / max)
      } else if (p.bitDepth === 1) {
        // bb_epaper writes the index bit itself (1 white), inverted when the darker entry comes first (1.6.6 on).
        g = (inverts1Bit ? v ^ 1 : semver.gte(firmware, '1.6.6') ? v : paletteGrey(p.palette, v) >> 7) ? 255 : 0
      } else {
        g = paletteGrey(p.palette, v)
      }
      grey[y * p.width + x] = g
    }
  }
  return { width: p.width, height: p.height, grey, rotated }
}

// ---- The image cache (src/filesystem.cpp) -------------------------------------------------------

/** filesystem_fix_filename: a name longer than 31 characters keeps its first 7 and last 17. */
function fixFilename(name: string): string {
  return `/${name.length > 31 ? name.slice(0, 7) + name.slice(-17) : name.slice(0, 31)}`
}

/** filesystem_extract_timestamp: the last 10 characters as a number when they are all digits, else 0. */
function extractTimestamp(name: string): number {
  if (name.length < 10) return 0
  const tail = name.slice(-10)
  return /^\d{10}$/.test(tail) ? Number(tail) : 0
}

/** The files a frame keeps: purged at each new download (filesystem_purge_old_file). */
export class FirmwareCache {
  readonly files = new Map<string, Buffer>()
  downloads = 0

  has(filename: string): boolean {
    return this.files.has(fixFilename(filename))
  }

  /** A PNG downloaded under `filename` at `now` (seconds): older versions and stale files go first. */
  store(filename: string, bytes: Buffer, now: number) {
    const path = fixFilename(filename)
    for (const existing of [...this.files.keys()]) {
      const ts = extractTimestamp(existing.slice(1))
      if (existing.slice(0, 14) === path.slice(0, 14) || now > ts + 86_400) this.files.delete(existing)
    }
    this.files.set(path, bytes)
    this.downloads++
  }
}
