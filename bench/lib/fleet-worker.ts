// A fleet of raw MQTT devices in a process of its own (the load generator), driven over IPC by
// bench/lib/fleet.ts. It connects devices with bounded dialing concurrency, subscribes them,
// counts deliveries per device (distinct sequence numbers, so QoS 1 duplicates are not counted
// twice) and the latency from the publisher's timestamp in the payload. A message without a
// sequence number (an image message: the screens scenario) counts once per distinct sha256.
import type { IPublishPacket } from 'mqtt-packet'
import { bounded, RawDevice } from './raw-mqtt.js'

type Cred = { id: string; secret: string }
type Req = { id: number; cmd: string; [k: string]: unknown }

const devices: RawDevice[] = []
/** Per device: the sequence numbers seen in the current measurement. */
let seen: Array<Set<number | string | undefined>> = []
let latencies: number[] = []
let received = 0
let duplicates = 0
let lastAt = 0
let target = Infinity
let reached: (() => void) | undefined

const now = () => performance.timeOrigin + performance.now()

function onMessage(index: number, p: IPublishPacket) {
  const at = now()
  let body: { n?: unknown; t?: unknown; sha256?: unknown }
  try {
    body = JSON.parse(p.payload.toString())
  } catch {
    return
  }
  // Only the benchmark's numbered messages or images (by their hash) count: a device subscribed to
  // devices/{id}/# also gets the service's own (retained state, config).
  const key = typeof body?.n === 'number' ? body.n : typeof body?.sha256 === 'string' ? body.sha256 : undefined
  if (key === undefined) return
  const s = (seen[index] ??= new Set())
  if (s.has(key)) {
    duplicates += 1
    return
  }
  s.add(key)
  received += 1
  if (typeof body.t === 'number') latencies.push(at - body.t)
  lastAt = at
  if (received >= target) reached?.()
}

async function connectAll(req: Req) {
  const creds = req.creds as Cred[]
  const locals = (req.localAddresses as string[] | undefined) ?? ['127.0.0.1']
  const topics = (req.subscribe as string[] | null) ?? []
  const start = now()
  let failed = 0
  const codes: Record<string, number> = {}
  const first = devices.length
  const ports = (req.ports as number[] | undefined) ?? [req.port as number]
  await bounded(creds, req.concurrency as number, async (c, i) => {
    const d = new RawDevice({
      host: '127.0.0.1',
      // Spread over the instances of a cluster: device i to instance i mod K.
      port: ports[i % ports.length]!,
      localAddress: locals[(first + i) % locals.length],
      clientId: c.id,
      username: c.id,
      password: c.secret,
      clean: req.clean as boolean,
      keepalive: 600,
      timeoutMs: 60_000,
    })
    const index = first + i
    devices[index] = d
    d.onPublish = (p) => onMessage(index, p)
    try {
      const code = await d.connect()
      codes[code] = (codes[code] ?? 0) + 1
      if (code !== 0) {
        failed += 1
        d.destroy()
        return
      }
      if (topics.length) {
        const granted = await d.subscribe(
          topics.map((t) => t.replace('{id}', c.id)),
          1,
        )
        if (granted.some((g) => g !== 1)) {
          failed += 1
          codes.refusedSubscription = (codes.refusedSubscription ?? 0) + 1
        }
      }
    } catch (err) {
      failed += 1
      codes[(err as Error).message] = (codes[(err as Error).message] ?? 0) + 1
    }
  })
  return { connected: creds.length - failed, failed, codes, start, end: now() }
}

function expect(req: Req) {
  seen = []
  latencies = []
  received = 0
  duplicates = 0
  lastAt = 0
  target = req.total as number
  return true
}

async function waitFor(req: Req) {
  const timeoutMs = req.timeoutMs as number
  if (received < target) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs)
      reached = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    reached = undefined
  }
  // A short grace period catches duplicates and stragglers after the target.
  await new Promise((r) => setTimeout(r, 200))
  const sorted = Float64Array.from(latencies).sort()
  const pick = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN)
  return { received, duplicates, lastAt, p50: pick(0.5), p99: pick(0.99), max: sorted.length ? sorted[sorted.length - 1]! : NaN }
}

async function disconnectAll(req: Req) {
  const polite = req.polite as boolean
  const all = devices.splice(0)
  if (polite) await bounded(all, 500, (d) => d.disconnect())
  else for (const d of all) d.destroy()
  return all.length
}

async function handle(req: Req): Promise<unknown> {
  switch (req.cmd) {
    case 'connect':
      return connectAll(req)
    case 'expect':
      return expect(req)
    case 'wait':
      return waitFor(req)
    case 'disconnect':
      return disconnectAll(req)
    case 'close':
      setImmediate(() => process.exit(0))
      return true
    case 'open':
      return devices.filter((d) => !d.closed).length
    default:
      throw new Error(`unknown command ${req.cmd}`)
  }
}

process.on('message', (req: Req) => {
  handle(req).then(
    (result) => process.send?.({ id: req.id, result }),
    (err: Error) => process.send?.({ id: req.id, error: err.stack ?? err.message }),
  )
})
process.on('disconnect', () => process.exit(0))
process.send?.({ ready: true, pid: process.pid })
