// A device running TRMNL's open firmware, as it behaves on the wire (usetrmnl/trmnl-firmware):
// GET /api/setup with its MAC once, then GET /api/display every refresh_rate seconds with its
// headers (Width and Height of its model's panel), reading the body of a 200, 301 or 429 only,
// downloading the image only when no file of that name is cached (with the same ID and
// Access-Token headers), and refusing what the firmware would not draw upright at its panel's
// size: a BMP that fails bmp.cpp's checks or on a panel other than 800×480, a PNG before 1.5.2,
// larger than the panel or deeper than the board draws, and a 1-bit palette PNG whose darker
// entry comes first on 1.6.6 and later (png_draw inverts it). POST /api/log too. For developers
// without the hardware (`npm run sim -- --protocol trmnl`) and for tests.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ServiceApi } from './api.js'

export type TrmnlSimOptions = {
  server: string
  name: string
  statePath: string
  /** The MAC it sends as ID; derived from the name when not given. */
  mac?: string
  model?: string
  firmware?: string
  /** Battery-Voltage it reports. */
  volts?: number
  /** A user's bearer token: the device claims itself with the code it was given (what its owner does in the app). */
  claimToken?: string
  outDir?: string
  /** Never wait longer than this between polls (tests; the firmware waits refresh_rate). */
  maxSleepMs?: number
  /** Sign requests with an Ed25519 device key when the service asks (auth_mode), as current firmware does; default true. */
  identity?: boolean
}

type TrmnlState = { mac: string; apiKey?: string; friendlyId?: string; filename?: string; image?: string; identityKey?: string }

export type TrmnlSimEvents = {
  pairing: [{ friendlyId: string; imageUrl: string }]
  waiting: [{ friendlyId: string }]
  image: [{ filename: string; bytes: number; file?: string }]
  'firmware-offer': [{ url: string }]
  reset: []
  poll: [{ status: number; filename: string | null; refreshRate: number; playlist?: string[] }]
  /** Cached images dropped because the live rotation (`playlist`) no longer names them. */
  pruned: [{ filenames: string[] }]
  warning: [{ message: string }]
}

/** What the firmware checks before drawing a BMP: a 1-bit BITMAPINFOHEADER file, bottom-up, palette black then white. */
export function checkBmp(bmp: Buffer): { width: number; height: number } {
  const fail = (why: string): never => {
    throw new Error(`not an image the firmware draws: ${why}`)
  }
  if (bmp.length < 62 || bmp.subarray(0, 2).toString('latin1') !== 'BM') fail('no BM signature')
  const width = bmp.readInt32LE(18)
  const height = bmp.readInt32LE(22)
  if (bmp.readUInt32LE(14) !== 40) fail('not a BITMAPINFOHEADER')
  if (bmp.readUInt16LE(28) !== 1) fail('not 1 bit per pixel')
  if (bmp.readUInt32LE(30) !== 0) fail('compressed')
  if (height <= 0) fail('top-down rows (negative height)')
  if (bmp.readUInt32LE(10) !== 62) fail('pixels not right after the 62-byte header')
  const stride = Math.ceil(width / 32) * 4
  if (bmp.length !== 62 + stride * height || bmp.readUInt32LE(2) !== bmp.length)
    fail(`size ${bmp.length}, expected ${62 + stride * height}`)
  if (bmp.readUInt32LE(34) !== stride * height) fail(`image data size ${bmp.readUInt32LE(34)}, expected ${stride * height}`)
  if (bmp.readUInt32LE(46) !== 2) fail('not a two-colour palette')
  if (bmp.readUInt32LE(54) !== 0 || (bmp.readUInt32LE(58) & 0xffffff) !== 0xffffff) fail('palette is not black, then white')
  return { width, height }
}

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** The panel of each model the firmware names (include/config.h; the X's size from display.cpp), deepest PNG it draws. */
const PANELS = new Map<string, { width: number; height: number; maxPngBits: number }>([
  ['og', { width: 800, height: 480, maxPngBits: 2 }],
  ['x', { width: 1872, height: 1404, maxPngBits: 8 }],
  ['waveshare', { width: 800, height: 480, maxPngBits: 2 }],
  ['seeed_esp32c3', { width: 800, height: 480, maxPngBits: 2 }],
  ['seeed_esp32s3', { width: 800, height: 480, maxPngBits: 2 }],
  ['xiao_epaper_display', { width: 800, height: 480, maxPngBits: 2 }],
  ['reTerminal E1001', { width: 800, height: 480, maxPngBits: 2 }],
  ['arduino_nano_esp32', { width: 800, height: 480, maxPngBits: 2 }],
])

const panelOfModel = (model: string) => PANELS.get(model) ?? { width: 800, height: 480, maxPngBits: 2 }

/** Whether a firmware version is at least `min` (x.y.z). */
function atLeast(firmware: string, min: string): boolean {
  const v = firmware.split(/[.-]/).map(Number)
  const m = min.split('.').map(Number)
  for (let i = 0; i < 3; i++) if ((v[i] || 0) !== m[i]) return (v[i] || 0) > m[i]!
  return true
}

/**
 * What the firmware checks before drawing a PNG (display.cpp png_to_epd, png_draw): refused when
 * larger than the panel (a portrait file of its size is rotated) or deeper than the board draws;
 * a 1-bit palette PNG whose first entry is the darker one is drawn inverted from 1.6.6 on.
 */
export function checkPngFor(png: Buffer, panel: { width: number; height: number; maxPngBits: number }, firmware: string) {
  const info = checkPng(png)
  const colourType = png[25]!
  const rotated = info.width === panel.height && info.height === panel.width
  if (!rotated && (info.width > panel.width || info.height > panel.height))
    throw new Error(`not an image the firmware draws: ${info.width}×${info.height} is larger than the ${panel.width}×${panel.height} panel`)
  if (info.bitDepth > panel.maxPngBits)
    throw new Error(`not an image the firmware draws: ${info.bitDepth} bits, this board draws ${panel.maxPngBits}`)
  if (colourType === 3 && info.bitDepth === 1 && atLeast(firmware, '1.6.6')) {
    // The PLTE chunk follows IHDR in the files the service writes; look for it anywhere before IDAT.
    const at = png.indexOf('PLTE', 33, 'latin1')
    const p = at > 0 ? png.subarray(at + 4, at + 10) : undefined
    if (p && p[0]! + (p[1]! << 2) + p[2]! < p[3]! + (p[4]! << 2) + p[5]!)
      throw new Error('drawn as a negative: firmware 1.6.6 and later inverts a 1-bit palette PNG whose darker entry comes first')
  }
  if (info.width !== panel.width || info.height !== panel.height)
    throw new Error(`a ${info.width}×${info.height} picture on a ${panel.width}×${panel.height} panel: not at the panel's size`)
  return info
}

/** What firmware 1.5.2 and later draws besides BMP: a PNG of 1, 2 or 4 bits of grey or palette. */
export function checkPng(png: Buffer): { width: number; height: number; bitDepth: number } {
  const fail = (why: string): never => {
    throw new Error(`not an image the firmware draws: ${why}`)
  }
  if (png.length < 33 || !png.subarray(0, 8).equals(PNG_MAGIC) || png.subarray(12, 16).toString('latin1') !== 'IHDR') fail('not a PNG')
  const bitDepth = png[24]!
  const colourType = png[25]!
  if (![1, 2, 4].includes(bitDepth) || ![0, 3].includes(colourType)) fail(`bit depth ${bitDepth}, colour type ${colourType}`)
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20), bitDepth }
}

export class TrmnlSimDevice extends EventEmitter<TrmnlSimEvents> {
  readonly opts: TrmnlSimOptions & Required<Pick<TrmnlSimOptions, 'model' | 'firmware' | 'volts'>>
  private readonly api: ServiceApi
  private state?: TrmnlState
  private stopping = false
  private wake?: () => void
  private running?: Promise<void>
  private lastRefresh = 900
  /** Images written to outDir, by file name: the cache the `playlist` answer prunes. */
  private readonly cached = new Map<string, string>()

  constructor(opts: TrmnlSimOptions) {
    super()
    // The firmware a frame bought this year runs; an option left undefined keeps the default.
    this.opts = { ...opts, model: opts.model ?? 'og', firmware: opts.firmware ?? '1.8.14', volts: opts.volts ?? 4.0 }
    this.api = new ServiceApi(opts.server)
  }

  get friendlyId() {
    return this.state?.friendlyId
  }
  get filename() {
    return this.state?.filename
  }

  start(): Promise<void> {
    this.running ??= this.run().catch((err) => {
      if (!this.stopping) throw err
    })
    return Promise.resolve()
  }

  /** Resolves when the device has stopped. */
  get finished(): Promise<void> {
    return this.running ?? Promise.resolve()
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.wake?.()
    await this.running?.catch(() => {})
  }

  /** Polls now instead of at the end of the current wait. */
  pollNow() {
    this.wake?.()
  }

  private get panel() {
    return panelOfModel(this.opts.model)
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      ID: this.state!.mac,
      ...(this.state?.apiKey ? { 'Access-Token': this.state.apiKey } : {}),
      'FW-Version': this.opts.firmware,
      Model: this.opts.model,
      'Battery-Voltage': String(this.opts.volts),
      RSSI: '-60',
      Width: String(this.panel.width),
      Height: String(this.panel.height),
      ...extra,
    }
  }

  /**
   * X-Public-Key, X-Signature and X-Timestamp (auth_signature.cpp): the service's time from
   * /api/time, signed with the 32-byte key after it. Nothing when that fails, like the firmware.
   */
  private async identityHeaders(): Promise<Record<string, string>> {
    if (!this.state?.identityKey) return {}
    const time = await this.json('/api/time').catch(() => undefined)
    const ms = Number(time?.body.timestamp_ms)
    if (time?.status !== 200 || !ms) return {}
    const key = createPrivateKey(this.state.identityKey)
    const spki = createPublicKey(key).export({ format: 'der', type: 'spki' })
    const pub = spki.subarray(spki.length - 32)
    const message = Buffer.alloc(40)
    message.writeBigUInt64BE(BigInt(ms), 0)
    pub.copy(message, 8)
    return { 'X-Public-Key': pub.toString('hex'), 'X-Signature': sign(null, message, key).toString('hex'), 'X-Timestamp': String(ms) }
  }

  private async json(path: string, init: RequestInit = {}) {
    const res = await fetch(`${this.opts.server.replace(/\/+$/, '')}${path}`, { ...init, signal: AbortSignal.timeout(30_000) })
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>
    return { status: res.status, body }
  }

  private async load(): Promise<TrmnlState> {
    try {
      return JSON.parse(await readFile(this.opts.statePath, 'utf8')) as TrmnlState
    } catch {
      const h = createHash('sha256').update(this.opts.name).digest()
      const mac = this.opts.mac ?? [0x02, ...h.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join(':')
      return { mac }
    }
  }

  private async save() {
    await mkdir(dirname(this.opts.statePath), { recursive: true })
    const tmp = `${this.opts.statePath}.${randomBytes(4).toString('hex')}.tmp`
    await writeFile(tmp, JSON.stringify(this.state, null, 2), { mode: 0o600 })
    await rename(tmp, this.opts.statePath)
  }

  private sleep(ms: number) {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.min(ms, this.opts.maxSleepMs ?? ms))
      this.wake = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }

  private async run() {
    this.state = await this.load()
    while (!this.stopping) {
      let wait = 5000
      try {
        if (!this.state.apiKey) await this.setup()
        else wait = await this.poll()
      } catch (err) {
        this.emit('warning', { message: (err as Error).message })
      }
      if (!this.stopping) await this.sleep(wait)
    }
  }

  private async setup() {
    const { status, body } = await this.json('/api/setup', { headers: this.headers() })
    if (status !== 200 || body.status !== 200) throw new Error(`/api/setup answered ${status}`)
    this.state = { mac: this.state!.mac, apiKey: String(body.api_key), friendlyId: String(body.friendly_id) }
    // A device key made after setup, as the firmware does when the service answers auth_mode ed25519.
    if (body.auth_mode === 'ed25519' && this.opts.identity !== false)
      this.state.identityKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    await this.save()
    this.emit('pairing', { friendlyId: this.state.friendlyId!, imageUrl: String(body.image_url) })
    if (this.opts.claimToken) await this.api.claim(this.opts.claimToken, this.state.friendlyId!, this.opts.name)
  }

  /** One GET /api/display and what follows from it; answers the wait until the next one. */
  private async poll(): Promise<number> {
    // The firmware sends the refresh it was last told (its stored setting).
    const signed = await this.identityHeaders()
    const { status, body } = await this.json('/api/display', {
      headers: this.headers({ 'Refresh-Rate': String(this.lastRefresh), ...signed }),
    })
    // Like the firmware (api-client/display.cpp): the body of a 200, 301 or 429 is a display answer;
    // anything else is an error screen and another try later, never a new pairing.
    if (![200, 301, 429].includes(status)) throw new Error(`/api/display answered ${status}`)
    // As ArduinoJson reads it into a uint32_t: not a number is 0, and 0 wakes the frame again at once.
    const refreshRate = typeof body.refresh_rate === 'number' && body.refresh_rate > 0 ? Math.floor(body.refresh_rate) : 0
    // 202 polls fast whatever refresh_rate says (bl.cpp applyFastPoll); otherwise it sleeps refresh_rate.
    if (refreshRate < 60 && body.status !== 202)
      this.emit('warning', { message: `refresh_rate ${refreshRate}: the firmware would wake again in ${refreshRate} s` })
    this.lastRefresh = refreshRate
    const playlist = Array.isArray(body.playlist) ? body.playlist.filter((f): f is string => typeof f === 'string') : undefined
    this.emit('poll', { status: Number(body.status), filename: (body.filename as string | null) ?? null, refreshRate, playlist })
    // status 500 resets like reset_firmware (bl.cpp handleApiDisplayResponse), Wi-Fi settings and all.
    if (body.reset_firmware === true || body.status === 500) {
      this.state = { mac: this.state!.mac }
      await this.save()
      this.emit('reset')
      return 0
    }
    if (body.status === 202) {
      this.emit('waiting', { friendlyId: String(body.friendly_id ?? this.state!.friendlyId) })
      return Math.max(refreshRate, 1) * 1000
    }
    const filename = body.filename as string | null
    // The firmware downloads a file only when it has none of that name (a BMP is never cached by name).
    const cachedFile = filename ? this.cached.get(filename) : undefined
    if (filename && filename !== this.state!.filename && cachedFile) {
      this.state!.filename = filename
      await this.save()
      this.emit('image', { filename, bytes: (await readFile(cachedFile)).length, file: cachedFile })
    } else if (filename && filename !== this.state!.filename && typeof body.image_url === 'string') {
      const res = await fetch(body.image_url, { headers: this.headers(), signal: AbortSignal.timeout(30_000) })
      if (!res.ok) throw new Error(`the image answered ${res.status}`)
      const bytes = Buffer.from(await res.arrayBuffer())
      // bl.cpp: a PNG by its Content-Type; a BMP by its first two bytes.
      const png = res.headers.get('content-type') === 'image/png' && bytes.subarray(0, 8).equals(PNG_MAGIC)
      if (png && !this.drawsPng()) throw new Error('a PNG for firmware that draws only BMP')
      if (png) checkPngFor(bytes, this.panel, this.opts.firmware)
      else {
        checkBmp(bytes)
        // display.cpp flips a BMP's rows with the panel's own size.
        if (this.panel.width !== 800 || this.panel.height !== 480)
          throw new Error(`a BMP on a ${this.panel.width}×${this.panel.height} panel`)
      }
      // filesystem.cpp: a newer file with the same first 13 characters replaces the older one.
      if (png) await this.prune(new Set([...this.cached.keys()].filter((f) => f.slice(0, 13) !== filename.slice(0, 13))), false)
      let file: string | undefined
      if (this.opts.outDir) {
        await mkdir(this.opts.outDir, { recursive: true })
        file = join(this.opts.outDir, `${filename.replace(/[^\w.-]/g, '_')}.${png ? 'png' : 'bmp'}`)
        await writeFile(file, bytes)
        this.cached.set(filename, file)
      }
      this.state!.filename = filename
      await this.save()
      this.emit('image', { filename, bytes: bytes.length, file })
    }
    if (playlist) await this.prune(new Set(playlist))
    if (body.update_firmware === true && typeof body.firmware_url === 'string') this.emit('firmware-offer', { url: body.firmware_url })
    return Math.max(refreshRate, 1) * 1000
  }

  /** As the firmware keeps its image cache: what the live rotation no longer names goes. */
  private async prune(keep: ReadonlySet<string>, announce = true) {
    const gone = [...this.cached.keys()].filter((f) => !keep.has(f))
    if (!gone.length) return
    for (const f of gone) {
      await rm(this.cached.get(f)!, { force: true })
      this.cached.delete(f)
    }
    if (announce) this.emit('pruned', { filenames: gone })
  }

  /** PNG came with firmware 1.5.2. */
  private drawsPng(): boolean {
    return atLeast(this.opts.firmware, '1.5.2')
  }

  /** POST /api/log, as the firmware sends what it logged. */
  async sendLog(message: string, level = 'info'): Promise<number> {
    const { status } = await this.json('/api/log', {
      method: 'POST',
      headers: { ...this.headers(await this.identityHeaders()), 'content-type': 'application/json' },
      body: JSON.stringify({ logs: [{ id: Date.now(), message, level, created_at: Math.floor(Date.now() / 1000) }] }),
    })
    return status
  }
}
