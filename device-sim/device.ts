// One simulated display device. It pairs the way firmware would (init, show the code, poll
// get-init-device at the server's interval, back off on SLOW_DOWN), keeps its credentials in a
// state file, then holds a persistent MQTT session: it shows images (downloaded and checked
// against their sha256), applies configs, acknowledges commands, reports its status and drains
// its battery. Everything it does is an event, so the CLI prints it and tests await it.
import { createHash, randomUUID } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import {
  type AckReport,
  type CommandMessage as WireCommand,
  type ConfigMessage as WireConfig,
  downlinkKinds,
  type ImageMessage as WireImage,
  type Numbered,
  type PromptMessage as WirePrompt,
  type LogEntry,
  type OtaOffer,
  type OtaReport,
  type ScheduleInfo,
  type StatusReport,
  topicFor,
  type UplinkKind,
  uplinkTopic,
} from '../src/mqtt/contract.js'
import { ApiError, ServiceApi, UnreachableError, type DeviceInfo } from './api.js'
import type { DisplayProfile } from './profiles.js'
import { manifestOf, verifyManifest } from '../src/firmware/signing.js'
import {
  freshState,
  loadState,
  remember,
  saveState,
  StateFileError,
  type Credentials,
  type PendingPairing,
  type SimState,
} from './state.js'

export type SimDeviceOptions = {
  /** The service's HTTP base URL. */
  server: string
  /** Shown in output; the device's name when it claims itself with a token. */
  name: string
  display: DisplayProfile
  statePath: string
  /** Images are saved here when set (they are always downloaded and checked). */
  outDir?: string
  transport?: 'tcp' | 'ws'
  /** Connect here instead of the URL that came with the credentials. */
  mqttUrl?: string
  /** A user's (or admin's) bearer token: the device claims itself through POST /api/device/validate. */
  claimToken?: string
  model?: string
  firmware?: string
  /** Period of up/status reports; one is also sent after every change. */
  statusIntervalMs?: number
  /** Battery percent lost per hour, and per image shown (an e-paper refresh costs energy). */
  drainPerHour?: number
  drainPerImage?: number
  /** Battery level of a device that has no state file yet. */
  battery?: number
  reconnectMinMs?: number
  reconnectMaxMs?: number
  /** How long a reboot keeps the device away. */
  rebootMs?: number
  /** A SUBSCRIBE unanswered this long ends the connection (and the device reconnects). */
  subackTimeoutMs?: number
  /** Give up (PairingFailedError) after this many expired or denied pairings; 0 = never. */
  pairAttempts?: number
  /** Forget the saved pairing (of whatever server) and pair anew: the only way a saved pairing is dropped on purpose. */
  reset?: boolean
  /** Log entries sent per minute on devices/{id}/up/log, in a batch every 10 s; 0 (the default) sends none. */
  logsPerMinute?: number
  /** The time the device goes by for its schedule's sleep (tests share the service's moved clock). */
  clock?: () => Date
  /** Fail firmware updates on purpose at this step (the verify failure is real: the bytes are changed before the check). */
  otaFail?: 'download' | 'verify' | 'install'
}

export type PairingInfo = PendingPairing & { resumed: boolean }
// The messages are the wire contract's; as received each carries `seq`.
export type PromptMessage = Numbered<WirePrompt>
export type ImageMessage = Numbered<WireImage>
export type ConfigMessage = Numbered<WireConfig>
export type CommandMessage = Numbered<WireCommand>
export type { StatusReport }

export type SimDeviceEvents = {
  /** A pairing code to show the user (a new one, or one resumed from the state file). */
  pairing: [PairingInfo]
  /** The service asked us to poll more slowly; `interval` is the new one in seconds. */
  'slow-down': [{ interval: number }]
  'pairing-failed': [{ status: string; attempt: number }]
  /** Credentials were issued and saved. */
  paired: [{ deviceId: string; statePath: string }]
  /** Credentials came from the state file: no pairing needed. */
  resumed: [{ deviceId: string; statePath: string }]
  /** Connected and subscribed: whatever is published to the device from now on reaches it. */
  connected: [{ deviceId: string; url: string; sessionPresent: boolean }]
  disconnected: [{ reason: string }]
  reconnecting: [{ attempt: number; delayMs: number; reason: string }]
  /** The broker refused our credentials (CONNACK 4 or 5): they are deleted and pairing starts again. */
  revoked: [{ deviceId: string; returnCode: number }]
  prompt: [PromptMessage]
  image: [{ message: ImageMessage; file?: string; bytes: Buffer; refreshed: boolean }]
  'image-failed': [{ message: ImageMessage; error: string }]
  config: [{ message: ConfigMessage; changed: boolean }]
  command: [CommandMessage]
  identify: [{ deviceId: string; name: string }]
  sleeping: [{ seconds: number; until?: string }]
  /** A batch of log entries was sent (--log-rate). */
  logs: [{ count: number }]
  /** The day plan in a config: when the next change comes, and the sleep it orders now. */
  schedule: [ScheduleInfo]
  rebooting: [{ ms: number }]
  /** Firmware update progress, as reported on up/ota. */
  ota: [OtaReport]
  /** A message delivered again (QoS 1 is at-least-once): handled already, ignored. */
  duplicate: [{ kind: 'command' | 'image' | 'prompt'; id: string }]
  status: [StatusReport & { reason: string }]
  'battery-low': [{ battery: number }]
  /** Something went wrong that the device survives (a bad message, a failed download). */
  warning: [{ message: string }]
  stopped: []
}

export type SimStats = {
  messages: number
  prompts: number
  images: number
  configs: number
  commands: number
  duplicates: number
  errors: number
  reconnects: number
  statusReports: number
  logs: number
}

/** Pairing expired or was denied `pairAttempts` times. */
export class PairingFailedError extends Error {
  override name = 'PairingFailedError'
}
/** The claim token was refused (not signed in, not allowed). */
export class ClaimRefusedError extends Error {
  override name = 'ClaimRefusedError'
}

type Action = { kind: 'sleep'; ms: number; until?: number } | { kind: 'reboot'; ms: number }
type SessionEnd = { wasConnected: boolean; refused?: number; reason: string; action?: Action }

const DEFAULT_FIRMWARE = '1.0.0-sim'
/** Never poll faster than this, even when the service says interval 0 (tests do). */
const MIN_POLL_MS = 250
/** RFC 8628 section 3.5: after slow_down the interval grows by 5 seconds. */
const SLOW_DOWN_STEP = 5
const MAX_POLL_INTERVAL = 60
/**
 * A SUBSCRIBE left unanswered this long ends the connection, as a device watchdog would: waiting
 * for ever would leave the device connected but deaf, and never "online" for its fleet.
 */
const SUBACK_TIMEOUT_MS = 15_000
const LOW_BATTERY = [15, 5]

const sha256 = (buf: Buffer) => createHash('sha256').update(buf).digest('hex')
const round1 = (n: number) => Math.round(n * 10) / 10

const EXTENSIONS: Record<string, string> = {
  'image/bmp': 'bmp',
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
}

export class SimDevice extends EventEmitter<SimDeviceEvents> {
  readonly opts: Required<
    Pick<
      SimDeviceOptions,
      | 'transport'
      | 'statusIntervalMs'
      | 'drainPerHour'
      | 'drainPerImage'
      | 'reconnectMinMs'
      | 'reconnectMaxMs'
      | 'rebootMs'
      | 'subackTimeoutMs'
      | 'pairAttempts'
      | 'firmware'
      | 'model'
    >
  > &
    SimDeviceOptions
  readonly api: ServiceApi
  readonly stats: SimStats = {
    messages: 0,
    prompts: 0,
    images: 0,
    configs: 0,
    commands: 0,
    duplicates: 0,
    errors: 0,
    reconnects: 0,
    statusReports: 0,
    logs: 0,
  }

  private state?: SimState
  private client?: MqttClient
  private running?: Promise<void>
  private stopping = false
  private readonly abort = new AbortController()
  private pendingAction?: Action
  /** Set when a connection ended before all downlink topics were granted: subscribe again even if the broker kept the session. */
  private subscribeAgain = false
  private statusTimer?: NodeJS.Timeout
  private logTimer?: NodeJS.Timeout
  private lastDrainAt = Date.now()
  private chain: Promise<void> = Promise.resolve()
  private saving: Promise<void> = Promise.resolve()
  private readonly pendingAcks = new Map<string, AckReport>()
  private readonly seenPrompts = new Set<string>()
  /** Whether any request reached the service in this run: before that, unreachable is fatal. */
  private reached = false
  private online?: { resolve: () => void; reject: (err: unknown) => void; promise: Promise<void> }

  constructor(opts: SimDeviceOptions) {
    super()
    this.opts = {
      transport: 'tcp',
      statusIntervalMs: 60_000,
      drainPerHour: 1,
      drainPerImage: 0.1,
      reconnectMinMs: 1000,
      reconnectMaxMs: 30_000,
      rebootMs: 1000,
      subackTimeoutMs: SUBACK_TIMEOUT_MS,
      pairAttempts: 0,
      firmware: DEFAULT_FIRMWARE,
      model: 'display-sim',
      // Options given as undefined keep their defaults.
      ...(Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) as SimDeviceOptions),
    }
    this.api = new ServiceApi(opts.server)
  }

  get deviceId(): string | undefined {
    return this.state?.credentials?.username
  }
  get connected(): boolean {
    return Boolean(this.client?.connected)
  }
  get battery(): number {
    return this.state?.battery ?? this.opts.battery ?? 100
  }
  get configVersion(): number {
    return this.state?.configVersion ?? 0
  }
  get shownImageId(): string | null {
    return this.state?.image?.imageId ?? null
  }
  get name(): string {
    return this.opts.name
  }
  /** The firmware it runs: the one an update installed, else --firmware. */
  get firmware(): string {
    return this.state?.firmware ?? this.opts.firmware
  }

  /**
   * Starts the device; resolves once it is connected to the broker for the first time (after
   * pairing if it has no credentials). Rejects if it stops or fails before that.
   */
  start(): Promise<void> {
    if (!this.running) {
      let resolve!: () => void
      let reject!: (err: unknown) => void
      const promise = new Promise<void>((res, rej) => {
        resolve = res
        reject = rej
      })
      promise.catch(() => {})
      this.online = { resolve, reject, promise }
      this.running = this.run().then(
        () => reject(new Error('the device stopped before it connected')),
        (err) => {
          reject(err)
          throw err
        },
      )
      this.running.catch(() => {})
    }
    return this.online!.promise
  }

  /** Resolves when the device has stopped; rejects with the error that stopped it. */
  get finished(): Promise<void> {
    return this.running ?? Promise.resolve()
  }

  /** Disconnects cleanly (no last will) and saves the state. */
  async stop(): Promise<void> {
    if (this.stopping) return this.finished.catch(() => {})
    this.stopping = true
    this.abort.abort()
    const c = this.client
    if (c) await endClient(c, !c.connected)
    await this.finished.catch(() => {})
  }

  // ---- the main loop -------------------------------------------------------------------

  private async run(): Promise<void> {
    try {
      this.state = await this.loadOrCreate()
      while (!this.stopping) {
        if (!this.state.credentials) {
          if (!(await this.pair())) break
        } else {
          this.emit('resumed', { deviceId: this.state.credentials.username, statePath: this.opts.statePath })
        }
        const outcome = await this.session()
        if (outcome === 'stopped') break
        // Revoked: forget everything tied to the old device id and pair as a new device.
        const old = this.state.credentials?.username ?? ''
        this.state = { ...freshState(this.opts.server, this.opts.name, this.state.display, this.state.battery) }
        await this.save()
        this.emit('revoked', { deviceId: old, returnCode: outcome.returnCode })
      }
    } finally {
      this.stopTimers()
      if (this.state) await this.save().catch(() => {})
      this.emit('stopped')
    }
  }

  private async loadOrCreate(): Promise<SimState> {
    const saved = await loadState(this.opts.statePath)
    const server = this.api.server
    const elsewhere = saved && saved.server.replace(/\/+$/, '') !== server
    if (saved?.credentials && elsewhere && !this.opts.reset) {
      // A mistyped --server must not cost the pairing: nothing is written, the user decides.
      throw new StateFileError(
        `${this.opts.statePath} holds the pairing with ${saved.server} (device ${saved.credentials.username}), but --server is ${server}. ` +
          `Check --server, or add --reset to forget that pairing and pair with ${server} as a new device.`,
      )
    }
    if (saved?.credentials && this.opts.reset) {
      this.emit('warning', { message: `--reset: forgetting the pairing with ${saved.server} (device ${saved.credentials.username})` })
    } else if (saved && !elsewhere) {
      if (saved.credentials && JSON.stringify(saved.display) !== JSON.stringify(this.opts.display)) {
        this.emit('warning', {
          message: `keeping the paired display profile ${describe(saved.display)}; delete ${this.opts.statePath} to pair with ${describe(this.opts.display)}`,
        })
      }
      return saved.credentials ? saved : { ...saved, display: this.opts.display }
    }
    const state = freshState(server, this.opts.name, this.opts.display, this.opts.battery ?? 100)
    await saveState(this.opts.statePath, state)
    return state
  }

  /** Saves one at a time, so an older snapshot never lands after a newer one. */
  private save(): Promise<void> {
    const next = this.saving.then(() => saveState(this.opts.statePath, this.state!))
    this.saving = next.catch(() => {})
    return next
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.abort.signal.removeEventListener('abort', done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.abort.signal.addEventListener('abort', done)
    })
  }

  /** Waits until the device's clock reads `at` (looking every second: the clock may be moved). */
  private async sleepUntil(at: number): Promise<void> {
    const now = () => (this.opts.clock ?? (() => new Date()))().getTime()
    while (!this.stopping && now() < at) await this.sleep(Math.min(1000, at - now()))
  }

  /** Exponential backoff with jitter: a fleet that lost its broker does not come back in step. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.opts.reconnectMaxMs, this.opts.reconnectMinMs * 2 ** Math.min(attempt, 20))
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2))
  }

  /** A request to the service; once the service has been reached, network errors are retried. */
  private async http<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await call()
        this.reached = true
        return out
      } catch (err) {
        if (err instanceof UnreachableError && this.reached && !this.stopping) {
          const delay = this.backoff(attempt)
          this.emit('warning', { message: `${err.message}; retrying in ${(delay / 1000).toFixed(1)} s` })
          await this.sleep(delay)
          continue
        }
        if (err instanceof ApiError && err.status === 429 && err.code !== 'SLOW_DOWN' && !this.stopping) {
          // The service's general rate limit (a fleet from one address hits it): wait as told.
          this.reached = true
          await this.sleep(Math.min(60, err.retryAfter ?? 1) * 1000)
          continue
        }
        if (err instanceof ApiError) this.reached = true
        throw err
      }
    }
  }

  // ---- pairing ---------------------------------------------------------------------------

  /** Pairs until credentials are issued (true) or the device is stopped (false). */
  private async pair(): Promise<boolean> {
    const state = this.state!
    let failures = 0
    while (!this.stopping) {
      let pairing = state.pairing
      const resumed = Boolean(pairing && Date.parse(pairing.expiresAt) > Date.now())
      if (!resumed) {
        const info: DeviceInfo = { model: this.opts.model, firmware: this.firmware }
        const init = await this.http(() => this.api.init(state.display, info))
        pairing = {
          deviceId: init.deviceId,
          deviceCode: init.deviceCode,
          pinCode: init.pinCode,
          userCode: init.userCode,
          verificationUri: init.verification_uri,
          verificationUriComplete: init.verification_uri_complete,
          expiresAt: init.expires_at,
          interval: init.interval,
        }
        state.pairing = pairing
        await this.save()
      }
      this.emit('pairing', { ...pairing!, resumed })
      if (this.opts.claimToken) await this.claim(pairing!)
      const outcome = await this.pollUntilDecided(pairing!, Boolean(this.opts.claimToken))
      if (outcome.kind === 'stopped') return false
      if (outcome.kind === 'credentials') {
        state.credentials = outcome.credentials
        state.deviceId = outcome.credentials.username
        state.pairing = undefined
        state.configVersion = 0
        state.image = undefined
        state.seenCommands = []
        state.seenImages = []
        await this.save()
        this.emit('paired', { deviceId: outcome.credentials.username, statePath: this.opts.statePath })
        return true
      }
      state.pairing = undefined
      await this.save()
      failures += 1
      this.emit('pairing-failed', { status: outcome.status, attempt: failures })
      if (this.opts.pairAttempts > 0 && failures >= this.opts.pairAttempts) {
        throw new PairingFailedError(`pairing ${outcome.status} ${failures} time${failures === 1 ? '' : 's'}; giving up`)
      }
    }
    return false
  }

  /** What the user's app does with the code: claim the device for the token's account. */
  private async claim(pairing: PendingPairing): Promise<void> {
    try {
      await this.http(() => this.api.claim(this.opts.claimToken!, pairing.pinCode, this.opts.name))
    } catch (err) {
      if (err instanceof ApiError && err.code === 'CODE_ALREADY_USED') return // claimed already (a resumed pairing, or a server that auto-approves)
      if (err instanceof ApiError && err.code === 'CODE_EXPIRED') return // polling reports the expiry and pairing starts over
      if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 404)) {
        throw new ClaimRefusedError(`the service refused the claim token: ${err.message}`)
      }
      throw err
    }
  }

  private async pollUntilDecided(
    pairing: PendingPairing,
    pollAtOnce: boolean,
  ): Promise<{ kind: 'credentials'; credentials: Credentials } | { kind: 'failed'; status: string } | { kind: 'stopped' }> {
    let interval = pairing.interval
    let first = true
    while (!this.stopping) {
      // The service accepts a first poll at once; after that at most one per interval.
      if (!(first && pollAtOnce)) await this.sleep(Math.max(MIN_POLL_MS, interval * 1000))
      first = false
      if (this.stopping) break
      let rec
      try {
        rec = await this.http(() => this.api.poll(pairing.deviceId, pairing.deviceCode))
      } catch (err) {
        if (err instanceof ApiError && err.code === 'SLOW_DOWN') {
          interval = Math.min(MAX_POLL_INTERVAL, Math.max(interval + SLOW_DOWN_STEP, err.retryAfter ?? 0))
          this.emit('slow-down', { interval })
          continue
        }
        // The service does not know this pairing (its database was reset): start over.
        if (err instanceof ApiError && err.status === 404) return { kind: 'failed', status: 'unknown' }
        throw err
      }
      // The service always sends websocketUrl; its schema only leaves it optional.
      if (rec.credentials) return { kind: 'credentials', credentials: rec.credentials as Credentials }
      if (rec.status === 'pending' || rec.status === 'approved') continue
      // active without credentials: they went to an earlier poll whose answer we never saw.
      return { kind: 'failed', status: rec.status === 'active' ? 'credentials lost' : rec.status }
    }
    return { kind: 'stopped' }
  }

  // ---- the MQTT session --------------------------------------------------------------------

  private async session(): Promise<'stopped' | { returnCode: number }> {
    let attempt = 0
    while (!this.stopping) {
      const end = await this.connectOnce()
      if (this.stopping) break
      if (end.refused === 4 || end.refused === 5) return { returnCode: end.refused }
      if (end.action) {
        if (end.action.kind === 'sleep' && end.action.until !== undefined) await this.sleepUntil(end.action.until)
        else await this.sleep(end.action.ms)
        attempt = 0
        continue
      }
      if (end.wasConnected) attempt = 0
      const delayMs = this.backoff(attempt++)
      this.stats.reconnects += 1
      this.emit('reconnecting', { attempt, delayMs, reason: end.reason })
      await this.sleep(delayMs)
    }
    return 'stopped'
  }

  private brokerUrl(creds: Credentials): string {
    if (this.opts.mqttUrl) return this.opts.mqttUrl
    return this.opts.transport === 'ws' ? creds.websocketUrl : creds.mqttUrl
  }

  private connectOnce(): Promise<SessionEnd> {
    const creds = this.state!.credentials!
    const url = this.brokerUrl(creds)
    return new Promise((resolve) => {
      const client = mqtt.connect(url, {
        clientId: creds.clientId,
        username: creds.username,
        password: creds.password,
        // A persistent session: what is published while we are away waits for us (QoS 1).
        clean: false,
        protocolVersion: 4,
        keepalive: 30,
        connectTimeout: 10_000,
        // Reconnection is ours (exponential backoff with jitter), as is resubscribing.
        reconnectPeriod: 0,
        resubscribe: false,
      })
      this.client = client
      let wasConnected = false
      let refused: number | undefined
      let reason = 'connection closed'
      client.on('connect', (connack) => {
        wasConnected = true
        void this.onOnline(client, url, connack.sessionPresent).catch((err) => this.fail(`after connecting: ${(err as Error).message}`))
      })
      client.on('message', (topic, payload) => this.enqueue(() => this.onMessage(topic, payload)))
      client.on('error', (err) => {
        const code = (err as { code?: unknown }).code
        if (typeof code === 'number' && !wasConnected) refused = code
        reason = err.message
      })
      client.once('close', () => {
        if (this.client === client) this.client = undefined
        this.stopTimers()
        if (wasConnected)
          this.emit('disconnected', { reason: this.stopping ? 'stopped' : this.pendingAction ? this.pendingAction.kind : reason })
        const action = this.pendingAction
        this.pendingAction = undefined
        resolve({ wasConnected, refused, reason, action })
        // mqtt.js keeps nothing running once closed without reconnectPeriod; end() frees its stores.
        client.end(true)
      })
    })
  }

  private async onOnline(client: MqttClient, url: string, sessionPresent: boolean): Promise<void> {
    const creds = this.state!.credentials!
    const id = creds.username
    if (!sessionPresent || this.subscribeAgain) {
      // A new session (first connect, or a broker that lost it): subscribe to the downlink topics.
      // One topic per SUBSCRIBE, one after the other: aedes 1.2 with aedes-persistence-redis
      // never answers a SUBSCRIBE of several topics on a persistent session (it stores the whole
      // list once per topic, concurrently, and all but one of those writes wait forever).
      this.subscribeAgain = true
      const topics = downlinkKinds.map((k) => creds.topics[k] ?? topicFor(id, k))
      for (const topic of topics) {
        const granted = await this.subscribeOne(client, topic)
        if (granted === undefined) {
          this.fail(`no SUBACK for ${topic} within ${this.opts.subackTimeoutMs / 1000} s; reconnecting`)
          client.end(true)
          return
        }
        if (granted.some((g) => g.qos === 128)) this.fail(`the broker refused the subscription to ${topic}`)
      }
      this.subscribeAgain = false
    }
    if (client !== this.client || !client.connected) return
    // Only now is it online: from here on, whatever is published to it reaches it.
    this.emit('connected', { deviceId: id, url, sessionPresent })
    for (const [key, body] of this.pendingAcks) void this.sendAck(body, key)
    this.stopTimers()
    this.statusTimer = setInterval(() => void this.reportStatus('schedule'), this.opts.statusIntervalMs)
    this.statusTimer.unref()
    if (this.opts.logsPerMinute) {
      this.logTimer = setInterval(() => this.sendLogs(Math.max(1, Math.round(this.opts.logsPerMinute! / 6))), 10_000)
      this.logTimer.unref()
    }
    // The first report of a connection says whether the broker kept the session: behind an
    // external broker the service learns of a lost session only this way.
    await this.reportStatus('connected', { sessionPresent })
    const installed = this.state!.installed
    if (installed && installed === this.firmware) {
      await this.otaReport({ version: installed, state: 'succeeded' })
      this.state!.installed = undefined
      await this.save()
    }
    this.online?.resolve()
  }

  /** The granted QoS list, or undefined when the broker did not answer in time. */
  private subscribeOne(client: MqttClient, topic: string): Promise<Array<{ qos: number }> | undefined> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve(undefined), this.opts.subackTimeoutMs)
      timer.unref()
      client.subscribe(topic, { qos: 1 }, (err, g) => {
        clearTimeout(timer)
        if (err) reject(err)
        else resolve(g ?? [])
      })
    })
  }

  private stopTimers() {
    if (this.statusTimer) clearInterval(this.statusTimer)
    if (this.logTimer) clearInterval(this.logTimer)
    this.statusTimer = undefined
    this.logTimer = undefined
  }

  /**
   * A batch of what a frame would log: mostly routine, now and then a warning. False (nothing
   * sent) while it is not connected.
   */
  sendLogs(count: number): boolean {
    const c = this.client
    const id = this.state?.credentials?.username
    if (!c?.connected || !id) return false
    const battery = round1(this.state!.battery)
    const entries: LogEntry[] = Array.from({ length: count }, (_, i) => {
      const n = this.stats.logs + i
      if (battery < 20 && n % 5 === 0)
        return { at: new Date().toISOString(), level: 'warn', message: `battery low: ${battery}%`, fields: { battery } }
      return {
        at: new Date().toISOString(),
        level: n % 3 ? 'info' : 'debug',
        message: n % 3 ? `heartbeat ${n}` : `wifi rssi ${-50 - (n % 30)} dBm`,
      }
    })
    this.stats.logs += count
    c.publish(uplinkTopic(id, 'log'), JSON.stringify(entries), { qos: 0 })
    this.emit('logs', { count })
    return true
  }

  /** Messages are handled one at a time, in the order they arrived. */
  private enqueue(task: () => Promise<void>) {
    this.chain = this.chain.then(task).catch((err) => this.fail((err as Error).message))
  }

  private fail(message: string) {
    this.stats.errors += 1
    this.emit('warning', { message })
  }

  /**
   * Publishes with QoS 1 and resolves on PUBACK; false when not connected, when the publish
   * failed, or when the connection closed first (mqtt.js would only call back after a
   * reconnect of the same client object, and each connection here is a new one).
   */
  private publish(topic: string, body: object): Promise<boolean> {
    const c = this.client
    if (!c?.connected) return Promise.resolve(false)
    return new Promise((resolve) => {
      const onClose = () => resolve(false)
      c.once('close', onClose)
      c.publish(topic, JSON.stringify(body), { qos: 1 }, (err) => {
        c.off('close', onClose)
        resolve(!err)
      })
    })
  }

  private topic(kind: UplinkKind): string {
    const creds = this.state!.credentials!
    // In the credentials, `ota` names the downlink offer topic; its uplink is `otaProgress`.
    return creds.topics[kind === 'ota' ? 'otaProgress' : kind] ?? uplinkTopic(creds.username, kind)
  }

  /** Acks are kept until the broker confirms them and sent again after a reconnect. */
  private async sendAck(body: AckReport, key: string = randomUUID()): Promise<boolean> {
    this.pendingAcks.set(key, body)
    const ok = await this.publish(this.topic('ack'), body)
    if (ok) this.pendingAcks.delete(key)
    return ok
  }

  private drain() {
    const now = Date.now()
    const hours = (now - this.lastDrainAt) / 3_600_000
    this.lastDrainAt = now
    this.setBattery(this.state!.battery - hours * this.opts.drainPerHour)
  }

  private setBattery(level: number) {
    const before = this.state!.battery
    const after = Math.max(0, Math.min(100, level))
    this.state!.battery = after
    for (const mark of LOW_BATTERY) if (before > mark && after <= mark) this.emit('battery-low', { battery: round1(after) })
  }

  /** Sends up/status now (on a schedule, and after every change). */
  async reportStatus(reason: string, extra: Pick<StatusReport, 'sessionPresent'> = {}): Promise<StatusReport> {
    this.drain()
    const report: StatusReport = {
      battery: round1(this.state!.battery),
      firmware: this.firmware,
      shownImageId: this.state!.image?.imageId ?? null,
      configVersion: this.state!.configVersion,
      interval: Math.round(this.opts.statusIntervalMs / 1000),
      ...extra,
    }
    if (await this.publish(this.topic('status'), report)) {
      this.stats.statusReports += 1
      this.emit('status', { ...report, reason })
    }
    return report
  }

  // ---- downlink messages -------------------------------------------------------------------

  private async onMessage(topic: string, payload: Buffer): Promise<void> {
    const kind = topic.split('/').pop()
    let body: Record<string, unknown>
    try {
      body = JSON.parse(payload.toString('utf8')) as Record<string, unknown>
      if (!body || typeof body !== 'object') throw new Error('not an object')
    } catch {
      return this.fail(`a message on ${topic} is not a JSON object`)
    }
    this.stats.messages += 1
    if (kind === 'prompt') return this.onPrompt(body as PromptMessage)
    if (kind === 'image') return this.onImage(body as ImageMessage)
    if (kind === 'config') return this.onConfig(body as ConfigMessage)
    if (kind === 'cmd') return this.onCommand(body as CommandMessage)
    if (kind === 'ota') return this.onOta(body as Numbered<OtaOffer>)
  }

  private async onPrompt(msg: PromptMessage) {
    if (typeof msg.promptId === 'string') {
      if (this.seenPrompts.has(msg.promptId)) {
        this.stats.duplicates += 1
        return void this.emit('duplicate', { kind: 'prompt', id: msg.promptId })
      }
      this.seenPrompts.add(msg.promptId)
    }
    this.stats.prompts += 1
    this.emit('prompt', msg)
    await this.sendAck({ kind: 'prompt', seq: msg.seq, promptId: msg.promptId ?? null, ok: true })
  }

  private async onConfig(msg: ConfigMessage) {
    if (typeof msg.version !== 'number' || !Number.isInteger(msg.version)) return this.fail('a config message has no version')
    // Trusted once, like a key burnt in at the factory: a later config cannot swap it (the same
    // channel carries the offers it is meant to check).
    if (typeof msg.firmwareKey === 'string' && !this.state!.credentials?.firmwareKey && !this.state!.firmwareKey)
      this.state!.firmwareKey = msg.firmwareKey
    const changed = msg.version !== this.state!.configVersion
    this.state!.configVersion = msg.version
    this.stats.configs += 1
    if (changed) await this.save()
    this.emit('config', { message: msg, changed })
    await this.sendAck({ kind: 'config', seq: msg.seq, version: msg.version, ok: true })
    if (changed) await this.reportStatus('config')
    if (msg.schedule) await this.onSchedule(msg.schedule)
  }

  /** A sleep window begins: away until it ends (nothing is sent meanwhile), back for what shows then. */
  private async onSchedule(schedule: ScheduleInfo) {
    this.emit('schedule', schedule)
    const until = schedule.sleepingUntil ? Date.parse(schedule.sleepingUntil) : Number.NaN
    const now = (this.opts.clock ?? (() => new Date()))().getTime()
    if (!(until > now)) return
    this.pendingAction = { kind: 'sleep', ms: until - now, until }
    this.emit('sleeping', { seconds: Math.round((until - now) / 1000), until: schedule.sleepingUntil! })
    const c = this.client
    if (c) await endClient(c, false)
  }

  private async otaReport(report: OtaReport): Promise<void> {
    this.emit('ota', report)
    await this.publish(this.topic('ota'), report)
  }

  /**
   * A firmware offer: download, check size, SHA-256 and the signature of the manifest against the
   * firmware key, "install" (remember the version) and restart, as a device's bootloader would.
   * A failure at any step is reported and the current firmware kept.
   */
  private async onOta(msg: Numbered<OtaOffer>) {
    await this.sendAck({ kind: 'ota', seq: msg.seq, ok: true })
    const state = this.state!
    // Only the newest offer counts: one the service has since replaced may still arrive after it.
    if (typeof msg.seq === 'number') {
      if (msg.seq <= (state.otaSeq ?? -1)) return
      state.otaSeq = msg.seq
    }
    if (msg.version === null) return
    if (typeof msg.version !== 'string' || typeof msg.releaseId !== 'string')
      return this.fail('a firmware offer lacks version or releaseId')
    if (msg.version === this.firmware) return
    // Without a seq (not through the service's downlink), redelivery is told apart by release.
    if (typeof msg.seq !== 'number' && state.seenOffers?.includes(msg.releaseId)) return
    state.seenOffers = remember(state.seenOffers ?? [], msg.releaseId)
    await this.save()
    const version = msg.version
    const failed = (reason: string) => this.otaReport({ version, state: 'failed', reason })
    // A validly signed image of another model would brick the board: refused before the download.
    if (msg.model !== this.opts.model) return failed(`verify: an image for model ${msg.model}, this is ${this.opts.model}`)
    // Still what the service offers? A session queued while away may hold an offer since replaced;
    // the answer also carries a fresh download link.
    const creds = state.credentials!
    let current: Awaited<ReturnType<ServiceApi['firmwareOffer']>>
    try {
      current = await this.api.firmwareOffer(creds.username, creds.password)
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return // nothing is offered any more
      return failed(`download: ${(err as Error).message}`)
    }
    if (current.releaseId !== msg.releaseId) return
    await this.otaReport({ version, state: 'downloading' })
    let bytes: Buffer
    try {
      if (this.opts.otaFail === 'download') throw new Error('simulated (--ota-fail download)')
      // Never more than the offer says: a larger answer is cut off, and then fails the size check.
      bytes = await this.api.download(current.url, msg.size + 1)
    } catch (err) {
      return failed(`download: ${(err as Error).message}`)
    }
    await this.otaReport({ version, state: 'verifying' })
    // A changed byte, so the real checks below refuse it.
    if (this.opts.otaFail === 'verify') bytes[0] = (bytes[0] ?? 0) ^ 0xff
    const key = state.credentials?.firmwareKey ?? state.firmwareKey
    if (bytes.length !== msg.size) return failed(`verify: size ${bytes.length}, expected ${msg.size}`)
    const digest = sha256(bytes)
    if (digest !== msg.sha256) return failed(`verify: sha256 mismatch (${digest.slice(0, 12)}…)`)
    if (!key) return failed('verify: no firmware key (pair again with a newer service)')
    if (!verifyManifest(key, manifestOf({ model: this.opts.model, version, sha256: digest, size: bytes.length }), msg.signature))
      return failed('verify: bad signature')
    await this.otaReport({ version, state: 'installing' })
    if (this.opts.otaFail === 'install') return failed('install: simulated (--ota-fail install)')
    state.firmware = version
    state.installed = version
    await this.save()
    // Restart into the new version: its first status after reconnecting reports it.
    this.pendingAction = { kind: 'reboot', ms: this.opts.rebootMs }
    this.emit('rebooting', { ms: this.opts.rebootMs })
    const c = this.client
    if (c) await endClient(c, false)
  }

  private async fetchImage(msg: Pick<ImageMessage, 'url' | 'data'>): Promise<Buffer> {
    if (typeof msg.data === 'string') return Buffer.from(msg.data, 'base64')
    if (typeof msg.url !== 'string') throw new Error('the message has neither data nor url')
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.api.download(msg.url)
      } catch (err) {
        const transient = err instanceof UnreachableError || (err instanceof ApiError && err.status >= 500)
        if (!transient || attempt >= 4 || this.stopping) throw err
        await this.sleep(this.backoff(attempt))
      }
    }
  }

  private async onImage(msg: ImageMessage, refreshed = false) {
    if (typeof msg.imageId !== 'string' || typeof msg.sha256 !== 'string') return this.fail('an image message lacks imageId or sha256')
    if (!refreshed && this.state!.seenImages.includes(msg.imageId)) {
      this.stats.duplicates += 1
      return void this.emit('duplicate', { kind: 'image', id: msg.imageId })
    }
    let bytes: Buffer
    try {
      bytes = await this.fetchImage(msg)
    } catch (err) {
      return this.imageFailed(msg, `download failed: ${(err as Error).message}`)
    }
    const digest = sha256(bytes)
    if (digest !== msg.sha256.toLowerCase())
      return this.imageFailed(msg, `sha256 mismatch: got ${digest.slice(0, 12)}…, expected ${msg.sha256.slice(0, 12)}…`)
    let file: string | undefined
    if (this.opts.outDir) {
      await mkdir(this.opts.outDir, { recursive: true })
      file = join(this.opts.outDir, `${msg.imageId.replace(/[^\w.-]/g, '_')}.${EXTENSIONS[msg.contentType] ?? 'bin'}`)
      await writeFile(file, bytes)
    }
    const state = this.state!
    state.image = { imageId: msg.imageId, url: msg.url, sha256: msg.sha256, format: msg.format, file }
    state.seenImages = remember(state.seenImages, msg.imageId)
    this.drain()
    this.setBattery(state.battery - this.opts.drainPerImage)
    this.stats.images += 1
    await this.save()
    this.emit('image', { message: msg, file, bytes, refreshed })
    if (!refreshed) await this.sendAck({ kind: 'image', seq: msg.seq, imageId: msg.imageId, ok: true, sha256: digest })
    await this.reportStatus(refreshed ? 'refresh' : 'image')
  }

  private async imageFailed(msg: ImageMessage, error: string) {
    this.stats.errors += 1
    this.emit('image-failed', { message: msg, error })
    await this.sendAck({ kind: 'image', seq: msg.seq, imageId: msg.imageId, ok: false, error })
  }

  private async onCommand(msg: CommandMessage) {
    if (typeof msg.commandId !== 'string' || typeof msg.command !== 'string')
      return this.fail('a command message lacks commandId or command')
    const state = this.state!
    if (state.seenCommands.includes(msg.commandId)) {
      this.stats.duplicates += 1
      return void this.emit('duplicate', { kind: 'command', id: msg.commandId })
    }
    state.seenCommands = remember(state.seenCommands, msg.commandId)
    await this.save()
    this.stats.commands += 1
    this.emit('command', msg)
    const ack = (extra: Record<string, unknown> = {}) =>
      this.sendAck({ seq: msg.seq, commandId: msg.commandId, command: msg.command, ok: true, ...extra })
    switch (msg.command) {
      case 'identify':
        this.emit('identify', { deviceId: state.credentials!.username, name: this.opts.name })
        await ack()
        return
      case 'refresh': {
        // Show the current image again: download it anew and check it, then report.
        const shown = state.image
        if (shown) {
          await this.onImage(
            {
              imageId: shown.imageId,
              url: shown.url,
              sha256: shown.sha256,
              format: shown.format,
              contentType: contentTypeOf(shown.format),
              width: 0,
              height: 0,
              bytes: 0,
            },
            true,
          )
        } else {
          await this.reportStatus('refresh')
        }
        await ack({ shownImageId: state.image?.imageId ?? null })
        return
      }
      case 'reboot':
      case 'sleep': {
        const seconds = msg.command === 'sleep' ? Number(msg.args?.seconds) : this.opts.rebootMs / 1000
        if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400) {
          await this.sendAck({
            seq: msg.seq,
            commandId: msg.commandId,
            command: msg.command,
            ok: false,
            error: 'sleep needs args.seconds from 1 to 86400',
          })
          return
        }
        // Acknowledge first and wait for the broker's PUBACK, then go away.
        await ack(msg.command === 'sleep' ? { seconds } : {})
        this.pendingAction = { kind: msg.command, ms: seconds * 1000 }
        if (msg.command === 'sleep') this.emit('sleeping', { seconds })
        else this.emit('rebooting', { ms: seconds * 1000 })
        const c = this.client
        if (c) await endClient(c, false)
        return
      }
      default:
        await this.sendAck({ seq: msg.seq, commandId: msg.commandId, command: msg.command, ok: false, error: 'UNKNOWN_COMMAND' })
    }
  }
}

function contentTypeOf(format: string): string {
  if (format.startsWith('bmp')) return 'image/bmp'
  if (format === 'jpeg') return 'image/jpeg'
  return 'image/png'
}

function describe(d: DisplayProfile): string {
  return `${d.palette} ${d.width}×${d.height}${d.dither ? ` (${d.dither})` : ''}`
}

/** Ends an mqtt.js client: a clean DISCONNECT (no last will) unless forced. */
function endClient(c: MqttClient, force: boolean): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => c.end(true, {}, () => resolve()), 2000)
    c.end(force, {}, () => {
      clearTimeout(timer)
      resolve()
    })
  })
}
