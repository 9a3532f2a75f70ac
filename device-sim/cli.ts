// The display-sim command: one simulated device (or a fleet) against the service, printing one
// line per thing that happens. `npm run sim -- --help` lists the options and exit codes.
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import cliProgress from 'cli-progress'
import QRCode from 'qrcode'
import { ApiError, UnreachableError } from './api.js'
import { ClaimRefusedError, PairingFailedError, SimDevice, type SimDeviceOptions } from './device.js'
import { TrmnlSimDevice } from './trmnl.js'
import { Fleet, type FleetStats } from './fleet.js'
import { renderPreview } from './preview.js'
import { DITHER_METHODS, PROFILE_NAMES, resolveProfile } from './profiles.js'
import { StateFileError } from './state.js'

export const EXIT = {
  OK: 0,
  ERROR: 1,
  USAGE: 2,
  UNREACHABLE: 3,
  PAIRING_FAILED: 4,
  CLAIM_REFUSED: 5,
  STATE_FILE: 6,
} as const

const HELP = `display-sim: a simulated display device for the display pairing service

Usage:
  npm run sim -- [options]            (or: node device-sim/bin.js [options])

It pairs with the service (shows a pin code and a QR code of the pairing link, then polls
until someone claims it), saves its credentials in a state file, and from then on connects
with them over MQTT: it prints each prompt, image, config and command it gets, saves and
previews images (checked against their sha256), acknowledges commands and reports its status.

Options:
  --server URL          the service (default http://localhost:3000)
  --profile NAME        display: ${PROFILE_NAMES.join(' | ')} (default bw-800x480)
  --width N, --height N override the profile's size in pixels
  --inline              ask for small images inline in the MQTT message
  --dither METHOD       how the service dithers for this display: ${DITHER_METHODS.join(' | ')}
                        (default: the palette's own)
  --name NAME           device name (default sim-<profile>; in a fleet NAME-1 … NAME-N)
  --state PATH          state file (default ./.display-sim/<name>.json); with --count a folder
                        (default ./.display-sim/<name>-fleet/) holding one file per device;
                        DISPLAY_SIM_HOME moves the default folder ./.display-sim
  --out DIR             save images here (default ./.display-sim/<name>-images; a fleet saves
                        only when --out is given, under DIR/<name>-<i>)
  --transport tcp|ws    MQTT over TCP (default) or WebSocket
  --protocol mqtt|trmnl mqtt (default), or a TRMNL device polling /api/display over HTTP
  --mqtt-url URL        connect here instead of the broker URL the service hands out
  --count N             fleet mode: N devices in this process
  --claim-token TOKEN   claim each new device for this account (a session token, as the user's
                        app would); otherwise a person claims it with the printed code
  --concurrency N       fleet devices pairing/connecting at once (default 10)
  --interval SECONDS    period of status reports (default 60; one is also sent after each change)
  --battery PCT         battery level of a new device (default 100)
  --drain PCT           battery drained per hour (default 1)
  --log-rate N          log entries sent per minute on up/log, a batch every 10 s (default 0: none)
  --firmware VERSION    firmware version reported (default 1.0.0-sim; an installed update replaces it;
                        with --protocol trmnl, 1.8.14)
  --model MODEL         with --protocol trmnl: the Model it sends (og, x, waveshare, …; default og),
                        whose panel size it reports and draws at
  --ota-fail STEP       fail firmware updates on purpose: download, verify (a changed byte) or install
  --pair-attempts N     give up after N expired or denied pairings (default 0: start over forever)
  --reset               forget the saved pairing and pair anew (a state file paired with another
                        --server is otherwise left alone, and the simulator exits naming both)
  --no-qr               do not print the QR code
  --no-preview          do not draw received images in the terminal
  -q, --quiet           print only problems (and the pairing code)
  -h, --help            this help
  -v, --version         the simulator's version

Behaviour: persistent MQTT session (clean session off, client id = device id); reconnects with
exponential backoff and jitter and survives a service restart; commands: identify (prints),
refresh (downloads the shown image again and reports), reboot (disconnects, comes back),
sleep N (disconnects for N seconds). Credentials refused by the broker (revoked: CONNACK 5,
unknown: 4) are deleted and the device pairs again. Ctrl-C disconnects cleanly and exits 0.

Exit codes:
  0  stopped by Ctrl-C / SIGTERM, or --help / --version
  1  unexpected error (the message says what)
  2  bad command-line options
  3  service unreachable when starting (nothing answered at --server)
  4  pairing expired or was denied --pair-attempts times
  5  the claim token was refused (not a valid session, or not allowed)
  6  the state file cannot be read or written, or holds a pairing with another --server
`

export class UsageError extends Error {
  override name = 'UsageError'
}

type Parsed = {
  device: Omit<SimDeviceOptions, 'statePath' | 'outDir' | 'name'>
  name: string
  state: string
  out?: string
  count: number
  concurrency: number
  qr: boolean
  preview: boolean
  quiet: boolean
  protocol: 'mqtt' | 'trmnl'
}

function int(name: string, v: string | undefined, min: number, max: number): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`)
  return n
}

const otaSteps = ['download', 'verify', 'install'] as const
function otaFailOf(v: string | undefined): (typeof otaSteps)[number] | undefined {
  if (v === undefined) return undefined
  const step = otaSteps.find((s) => s === v)
  if (!step) throw new UsageError(`--ota-fail must be one of ${otaSteps.join(', ')}`)
  return step
}

function num(name: string, v: string | undefined, min: number, max: number): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`--${name} must be a number from ${min} to ${max}`)
  return n
}

export function parseCli(argv: string[]): Parsed | 'help' | 'version' {
  let values
  try {
    ;({ values } = parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        server: { type: 'string' },
        profile: { type: 'string' },
        width: { type: 'string' },
        height: { type: 'string' },
        inline: { type: 'boolean' },
        dither: { type: 'string' },
        name: { type: 'string' },
        state: { type: 'string' },
        out: { type: 'string' },
        transport: { type: 'string' },
        protocol: { type: 'string' },
        'mqtt-url': { type: 'string' },
        count: { type: 'string' },
        'claim-token': { type: 'string' },
        concurrency: { type: 'string' },
        interval: { type: 'string' },
        battery: { type: 'string' },
        drain: { type: 'string' },
        'log-rate': { type: 'string' },
        firmware: { type: 'string' },
        model: { type: 'string' },
        'ota-fail': { type: 'string' },
        'pair-attempts': { type: 'string' },
        reset: { type: 'boolean' },
        'no-qr': { type: 'boolean' },
        'no-preview': { type: 'boolean' },
        quiet: { type: 'boolean', short: 'q' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }))
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  if (values.help) return 'help'
  if (values.version) return 'version'
  const server = values.server ?? 'http://localhost:3000'
  try {
    const u = new URL(server)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error()
  } catch {
    throw new UsageError(`--server must be an http(s) URL, got "${server}"`)
  }
  const profileName = values.profile ?? 'bw-800x480'
  let display
  try {
    display = resolveProfile(profileName, {
      width: int('width', values.width, 8, 4096),
      height: int('height', values.height, 8, 4096),
      inline: values.inline,
      dither: values.dither,
    })
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
  const transport = values.transport ?? 'tcp'
  if (transport !== 'tcp' && transport !== 'ws') throw new UsageError('--transport must be tcp or ws')
  const protocol = values.protocol ?? 'mqtt'
  if (protocol !== 'mqtt' && protocol !== 'trmnl') throw new UsageError('--protocol must be mqtt or trmnl')
  const count = int('count', values.count, 1, 100_000) ?? 1
  if (protocol === 'trmnl' && count > 1) throw new UsageError('--protocol trmnl runs one device (no --count)')
  const name = values.name ?? `sim-${profileName}`
  // Where state and images go unless --state/--out say: another checkout's (or a test's) pairings stay apart.
  const home = process.env.DISPLAY_SIM_HOME || '.display-sim'
  if (!/^[\w.-]{1,64}$/.test(name)) throw new UsageError('--name may use letters, digits, ".", "_" and "-" (at most 64)')
  if (values.model !== undefined && !/^[\w .-]{1,64}$/.test(values.model))
    throw new UsageError('--model may use letters, digits, spaces, ".", "_" and "-" (at most 64)')
  const fleet = count > 1
  const statusInterval = num('interval', values.interval, 1, 86_400)
  return {
    device: {
      server,
      display,
      transport,
      mqttUrl: values['mqtt-url'],
      claimToken: values['claim-token'],
      firmware: values.firmware,
      model: values.model,
      otaFail: otaFailOf(values['ota-fail']),
      battery: num('battery', values.battery, 0, 100),
      drainPerHour: num('drain', values.drain, 0, 100),
      logsPerMinute: int('log-rate', values['log-rate'], 0, 6000),
      statusIntervalMs: statusInterval === undefined ? undefined : statusInterval * 1000,
      pairAttempts: int('pair-attempts', values['pair-attempts'], 0, 1_000_000),
      reset: Boolean(values.reset),
    },
    name,
    state: resolve(values.state ?? (fleet ? join(home, `${name}-fleet`) : join(home, `${name}.json`))),
    out: values.out ? resolve(values.out) : fleet ? undefined : resolve(join(home, `${name}-images`)),
    count,
    concurrency: int('concurrency', values.concurrency, 1, 1000) ?? 10,
    qr: !values['no-qr'],
    preview: !values['no-preview'],
    quiet: Boolean(values.quiet),
    protocol,
  }
}

// ---- output ------------------------------------------------------------------------------

const tty = Boolean(process.stdout.isTTY)
const colour = tty && !process.env.NO_COLOR
const paint = (code: string) => (s: string) => (colour ? `\x1b[${code}m${s}\x1b[0m` : s)
const bold = paint('1')
const dim = paint('2')
const red = paint('31')
const green = paint('32')
const yellow = paint('33')
const cyan = paint('36')

const clock = () => new Date().toTimeString().slice(0, 8)
const short = (id: string | null | undefined) => (id ? `${id.slice(0, 8)}…` : '–')
const INDENT = ' '.repeat(9)

function line(name: string, tag: string, text: string) {
  process.stdout.write(`${dim(clock())} ${cyan(name)} ${bold(tag.padEnd(9))}${text}\n`)
}
function problem(name: string, text: string) {
  process.stderr.write(`${dim(clock())} ${cyan(name)} ${red('problem'.padEnd(9))}${text}\n`)
}

async function printPairing(
  dev: SimDevice,
  p: { pinCode: string; verificationUriComplete: string; expiresAt: string; resumed: boolean },
  opts: { qr: boolean; server: string },
) {
  const until = new Date(p.expiresAt).toTimeString().slice(0, 5)
  if (dev.opts.claimToken) return line(dev.name, 'pairing', `code ${bold(yellow(p.pinCode))}, claiming it with the token`)
  line(dev.name, 'pairing', `${p.resumed ? 'still waiting: ' : ''}code ${bold(yellow(p.pinCode))} (valid until ${until})`)
  process.stdout.write(`${INDENT}claim it: open ${p.verificationUriComplete}${opts.qr ? ' or scan:' : ''}\n`)
  if (opts.qr) {
    const qr = await QRCode.toString(p.verificationUriComplete, tty ? { type: 'terminal', small: true } : { type: 'utf8' })
    process.stdout.write(`${qr.replace(/^/gm, INDENT)}\n`)
  }
  process.stdout.write(
    `${INDENT}or with curl: curl -X POST ${opts.server.replace(/\/+$/, '')}/api/device/validate -H "authorization: Bearer $TOKEN" ` +
      `-H 'content-type: application/json' -d '{"pinCode":"${p.pinCode}","name":"${dev.name}"}'\n`,
  )
}

/** Wires a device's events to output lines, written in the order the events happened. */
function attachPrinter(dev: SimDevice, opts: { quiet: boolean; qr: boolean; preview: boolean; server: string; fleet: boolean }) {
  // Some output is prepared asynchronously (QR code, preview): later lines wait for it.
  let pending: Promise<unknown> = Promise.resolve()
  const inOrder = (write: () => unknown) => {
    pending = pending.then(write).catch((err) => problem(dev.name, `cannot print: ${(err as Error).message}`))
  }
  const say = (tag: string, text: string) => {
    if (!opts.quiet) inOrder(() => line(dev.name, tag, text))
  }
  const problemLine = (text: string) => inOrder(() => problem(dev.name, text))
  dev.on('pairing', (p) => {
    // In a fleet without a claim token somebody has to type the codes (unless the service
    // auto-approves): they are printed even in the quiet fleet output.
    if (opts.fleet && dev.opts.claimToken) return say('pairing', `code ${p.pinCode}`)
    if (opts.fleet) return inOrder(() => line(dev.name, 'pairing', `code ${bold(yellow(p.pinCode))} → ${p.verificationUriComplete}`))
    inOrder(() => printPairing(dev, p, opts))
  })
  dev.on('slow-down', ({ interval }) => say('slow down', `the service asked for slower polling: every ${interval} s`))
  dev.on('pairing-failed', ({ status, attempt }) => problemLine(`pairing ${status} (attempt ${attempt}); starting over`))
  dev.on('paired', ({ deviceId, statePath }) => say('paired', `device ${deviceId}; credentials saved in ${statePath}`))
  dev.on('resumed', ({ deviceId, statePath }) => say('resumed', `device ${deviceId} with the credentials in ${statePath}`))
  dev.on('connected', ({ url, sessionPresent }) => say('online', `${url} (${sessionPresent ? 'session resumed' : 'new session'})`))
  dev.on('disconnected', ({ reason }) => say('offline', reason))
  dev.on('reconnecting', ({ attempt, delayMs, reason }) =>
    say('retry', `${reason}; reconnecting in ${(delayMs / 1000).toFixed(1)} s (attempt ${attempt})`),
  )
  dev.on('revoked', ({ deviceId, returnCode }) =>
    problemLine(
      `the broker refused device ${deviceId} (CONNACK ${returnCode}: ${returnCode === 5 ? 'credentials revoked' : 'unknown device or wrong secret'}); pairing again`,
    ),
  )
  dev.on('prompt', (p) => say('prompt', `"${p.text}"${p.model ? dim(` (model ${p.model})`) : ''}`))
  dev.on('image', ({ message: m, file, bytes, refreshed }) => {
    say(
      refreshed ? 'refreshed' : 'image',
      `${short(m.imageId)} ${m.format} ${m.width ? `${m.width}×${m.height} ` : ''}${bytes.length.toLocaleString('en')} bytes, sha256 ${green('ok')}${file ? ` → ${file}` : ''}`,
    )
    if (opts.preview && !opts.quiet && !opts.fleet) {
      inOrder(async () => {
        try {
          process.stdout.write(`${(await renderPreview(bytes, { columns: 40, color: colour })).replace(/^/gm, INDENT)}\n`)
        } catch (err) {
          problem(dev.name, `cannot draw a preview: ${(err as Error).message}`)
        }
      })
    }
  })
  dev.on('image-failed', ({ message, error }) => problemLine(`image ${short(message.imageId)}: ${error}`))
  dev.on('config', ({ message: c, changed }) =>
    say(
      'config',
      `v${c.version}${changed ? '' : ' (unchanged)'} name "${c.name ?? ''}" model ${c.selectedModel ?? '–'} colour ${c.color ?? '–'} icon ${c.icon ?? '–'}`,
    ),
  )
  dev.on('command', (c) => say('command', `${c.command}${c.args?.seconds ? ` ${c.args.seconds} s` : ''} ${dim(`(${short(c.commandId)})`)}`))
  dev.on('identify', ({ deviceId, name }) => {
    if (!opts.quiet)
      inOrder(() =>
        process.stdout.write(`${tty ? '\x07' : ''}${INDENT}${bold(yellow(`>>> IDENTIFY: this is "${name}" (${deviceId}) <<<`))}\n`),
      )
  })
  dev.on('sleeping', ({ seconds, until }) =>
    say('sleep', until ? `going to sleep until ${localTime(until, lastTimeZone)} (${seconds} s)` : `going to sleep for ${seconds} s`),
  )
  let lastTimeZone = 'UTC'
  dev.on('schedule', (s) => {
    lastTimeZone = s.timeZone
    const windows = s.sleep.map((w) => `${w.from}–${w.to}`).join(', ')
    say(
      'schedule',
      [
        s.sleepingUntil ? `sleeping until ${localTime(s.sleepingUntil, s.timeZone)}` : null,
        s.nextChangeAt ? `next change ${localTime(s.nextChangeAt, s.timeZone)}` : 'nothing planned',
        windows ? `sleeps ${windows}` : null,
        dim(s.timeZone),
      ]
        .filter(Boolean)
        .join(', '),
    )
  })
  dev.on('rebooting', ({ ms }) => say('reboot', `rebooting (back in ${(ms / 1000).toFixed(1)} s)`))
  dev.on('duplicate', ({ kind, id }) => say('duplicate', `${kind} ${short(id)} delivered again; ignored`))
  dev.on('logs', ({ count }) => say('log', `sent ${count} log entries`))
  dev.on('ota', ({ version, state, reason }) => say('firmware', `${version}: ${state}${reason ? ` (${reason})` : ''}`))
  dev.on('status', (s) =>
    say(
      'status',
      `battery ${s.battery}% firmware ${s.firmware} shown ${short(s.shownImageId)} config v${s.configVersion} ${dim(`(${s.reason})`)}`,
    ),
  )
  dev.on('battery-low', ({ battery }) => problemLine(`battery low: ${battery}%`))
  dev.on('warning', ({ message }) => problemLine(message))
}

function summary(s: FleetStats): string {
  return `${s.connected}/${s.total} connected · ${s.messages} messages · ${s.images} images · ${s.commands} commands · ${s.duplicates} duplicates · ${s.errors} errors · ${s.reconnects} reconnects`
}

// ---- running -------------------------------------------------------------------------------

export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return EXIT.USAGE
  if (err instanceof UnreachableError) return EXIT.UNREACHABLE
  if (err instanceof PairingFailedError) return EXIT.PAIRING_FAILED
  if (err instanceof ClaimRefusedError) return EXIT.CLAIM_REFUSED
  if (err instanceof StateFileError) return EXIT.STATE_FILE
  return EXIT.ERROR
}

function explain(err: unknown): string {
  if (err instanceof UnreachableError)
    return `${err.message}: is the service running? Start it with \`npm start\`, or point --server at it.`
  if (err instanceof ApiError) return `the service refused a request: ${err.message}`
  return (err as Error)?.message ?? String(err)
}

/** A TRMNL device: polls over HTTP as the firmware does, and says what happens. */
async function runTrmnl(p: Parsed): Promise<number> {
  const dev = new TrmnlSimDevice({
    server: p.device.server,
    name: p.name,
    statePath: p.state,
    outDir: p.out,
    claimToken: p.device.claimToken,
    firmware: p.device.firmware,
    model: p.device.model,
  })
  dev.on('pairing', ({ friendlyId }) =>
    line(p.name, 'pairing', `the frame shows ${friendlyId}: type it in the app (or the console's Pair a frame)`),
  )
  dev.on('waiting', ({ friendlyId }) => !p.quiet && line(p.name, 'waiting', `not claimed yet (${friendlyId})`))
  dev.on(
    'poll',
    ({ status, filename, refreshRate }) => !p.quiet && line(p.name, 'poll', `status ${status} ${filename ?? ''} next in ${refreshRate} s`),
  )
  dev.on('image', ({ filename, bytes, file }) =>
    line(p.name, 'image', `${filename} ${bytes.toLocaleString('en-US')} bytes, BMP ok${file ? ` → ${file}` : ''}`),
  )
  dev.on('firmware-offer', ({ url }) => line(p.name, 'firmware', `an update is offered: ${url}`))
  dev.on('reset', () => line(p.name, 'reset', 'the service forgot this device: pairing again'))
  dev.on('warning', ({ message }) => line(p.name, 'warning', message))
  onSignals(() => dev.stop())
  await dev.start()
  await dev.finished
  return EXIT.OK
}

async function runSingle(p: Parsed): Promise<number> {
  if (p.protocol === 'trmnl') return runTrmnl(p)
  const dev = new SimDevice({ ...p.device, name: p.name, statePath: p.state, outDir: p.out })
  attachPrinter(dev, { quiet: p.quiet, qr: p.qr, preview: p.preview, server: p.device.server, fleet: false })
  onSignals(() => dev.stop())
  void dev.start().catch(() => {})
  await dev.finished
  return EXIT.OK
}

async function runFleetCli(p: Parsed): Promise<number> {
  const fleet = new Fleet({ ...p.device, name: p.name, count: p.count, stateDir: p.state, outDir: p.out, concurrency: p.concurrency })
  for (const dev of fleet.devices) attachPrinter(dev, { quiet: true, qr: false, preview: false, server: p.device.server, fleet: true })
  let stopping = false
  onSignals(async () => {
    stopping = true
    await fleet.stop()
  })
  const bar = new cliProgress.SingleBar(
    {
      format: 'pairing and connecting [{bar}] {value}/{total} connected · {paired} paired · {errors} errors',
      noTTYOutput: true,
      notTTYSchedule: 5000,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  )
  bar.start(p.count, 0, { paired: 0, errors: 0 })
  const onProgress = (s: FleetStats) => bar.update(s.connected, { paired: s.paired, errors: s.errors })
  fleet.on('progress', onProgress)
  try {
    await fleet.start()
  } catch (err) {
    bar.stop()
    if (stopping) return EXIT.OK
    throw err
  }
  fleet.off('progress', onProgress)
  bar.update(fleet.stats().connected)
  bar.stop()
  line(p.name, 'fleet', `all ${p.count} devices paired and connected; state in ${p.state}`)
  // A live summary: rewritten in place on a terminal, a line every 10 s otherwise.
  let last = ''
  const timer = setInterval(
    () => {
      const text = summary(fleet.stats())
      if (tty) process.stdout.write(`\r\x1b[2K${dim(clock())} ${text}`)
      else if (text !== last) line(p.name, 'summary', text)
      last = text
    },
    tty ? 1000 : 10_000,
  )
  await Promise.all(fleet.devices.map((d) => d.finished.catch((err) => problem(d.name, explain(err)))))
  clearInterval(timer)
  if (tty) process.stdout.write('\n')
  line(p.name, 'stopped', summary(fleet.stats()))
  return EXIT.OK
}

function onSignals(stop: () => Promise<void>) {
  let count = 0
  const handler = () => {
    count += 1
    // A second Ctrl-C does not wait for a clean disconnect.
    if (count > 1) process.exit(130)
    void stop()
  }
  process.on('SIGINT', handler)
  process.on('SIGTERM', handler)
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseCli>
  try {
    parsed = parseCli(argv)
  } catch (err) {
    process.stderr.write(`display-sim: ${(err as Error).message}\nRun with --help for the options.\n`)
    return EXIT.USAGE
  }
  if (parsed === 'help') {
    process.stdout.write(HELP)
    return EXIT.OK
  }
  if (parsed === 'version') {
    process.stdout.write(`display-sim ${version()}\n`)
    return EXIT.OK
  }
  try {
    return parsed.count > 1 ? await runFleetCli(parsed) : await runSingle(parsed)
  } catch (err) {
    process.stderr.write(`display-sim: ${explain(err)}\n`)
    return exitCodeFor(err)
  }
}

// Run when executed with tsx (npm run sim); bin.js imports main() itself.
if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`display-sim: ${explain(err)}\n`)
      process.exit(EXIT.ERROR)
    },
  )
}

/** An instant as the device's wall clock shows it: HH:MM in its schedule's time zone (and the day when it is not today). */
function localTime(iso: string, timeZone: string): string {
  const at = new Date(iso)
  const day = (d: Date) => d.toLocaleDateString('en-GB', { timeZone })
  const time = at.toLocaleTimeString('en-GB', { timeZone, hour: '2-digit', minute: '2-digit' })
  return day(at) === day(new Date())
    ? time
    : `${at.toLocaleDateString('en-GB', { timeZone, weekday: 'short', day: 'numeric', month: 'short' })} ${time}`
}
