// Our service in a process of its own, so its CPU time and resident memory are its own: the real
// app (buildApp) on loopback, configured by the environment the benchmark passes. The parent talks
// to it over the IPC channel (see bench/lib/ours.ts): seed devices, publish, count events.
//
// Benchmark setup, not a product path: devices are inserted directly into the device table
// (the row insertDevice writes, with a SHA-256 secret hash, exactly what pairing stores) because
// pairing 10,000+ devices over HTTP would take longer than the benchmark itself. The pairing
// scenario measures the real HTTP pairing flow.
import { readFileSync } from 'node:fs'
import { writeHeapSnapshot } from 'node:v8'
import type { PublishPacket } from 'aedes'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { sha256 } from '../../src/devices/codes.js'
import { device } from '../../src/devices/tables.js'
import { countEvents } from '../../src/events/repository.js'
import { DEFAULT_DISPLAY } from '../../src/images/profiles.js'
import { FLEET_TOPIC } from '../../src/mqtt/contract.js'
import { timedBody } from '../lib/context.js'

type Request = { id: number; cmd: string; [k: string]: unknown }

const config = loadConfig(process.env)
const app = await buildApp(config)
await app.listen({ port: config.port, host: '127.0.0.1' })

const send = (msg: object) => process.send?.(msg)
let ownerId: string | undefined
let sessionToken: string | undefined

async function owner(): Promise<{ userId: string; token: string }> {
  if (!ownerId || !sessionToken) {
    const res = await app.auth.api.signUpEmail({
      body: { email: `bench-${process.pid}@example.com`, password: 'bench-password-123', name: 'Bench' },
    })
    ownerId = res.user.id
    sessionToken = res.token as string
  }
  return { userId: ownerId, token: sessionToken }
}

/**
 * Devices from a JSON file of {id, secret}: the rows insertDevice would write, 500 to a statement
 * (100,000 single-row inserts would take minutes on a shared machine).
 */
async function seed(file: string): Promise<number> {
  const { userId } = await owner()
  const creds = JSON.parse(readFileSync(file, 'utf8')) as Array<{ id: string; secret: string }>
  const db = app.database.db
  for (let i = 0; i < creds.length; i += 500) {
    const rows = creds.slice(i, i + 500).map((c) => ({
      id: c.id,
      name: `bench ${c.id.slice(0, 8)}`,
      userId,
      pinCode: 'BCDF-GHJK',
      display: DEFAULT_DISPLAY,
      secretHash: sha256(c.secret),
      secretIssuedAt: new Date(),
    }))
    await db.insert(device).values(rows)
  }
  return creds.length
}

/**
 * Each device's own topic gets `count` messages; at most `inflight` publishes are unacknowledged
 * by the broker. `direct`: straight to the broker, past the durable downlink (nothing stored,
 * nothing numbered), to measure what the outbox costs.
 */
async function fanOut(ids: string[], count: number, bytes: number, inflight: number, seqBase: number, direct = false): Promise<number> {
  let sent = 0
  const jobs: Array<() => Promise<void>> = []
  const link = direct ? app.broker! : app.deviceLink
  for (let seq = seqBase; seq < seqBase + count; seq++) {
    for (const id of ids) jobs.push(() => link.publish(id, 'cmd', timedBody(seq, bytes)))
  }
  let next = 0
  async function lane() {
    while (next < jobs.length) {
      const job = jobs[next++]!
      await job()
      sent += 1
    }
  }
  await Promise.all(Array.from({ length: inflight }, lane))
  return sent
}

/** One message to every device at once on the fleet topic (the service publishes; devices may only subscribe). */
async function broadcast(count: number, bytes: number, inflight: number, seqBase: number): Promise<number> {
  const aedes = app.broker!.aedes
  let sent = 0
  let next = 0
  async function lane() {
    while (next < count) {
      const seq = seqBase + next++
      const payload = Buffer.from(JSON.stringify(timedBody(seq, bytes)))
      await new Promise<void>((resolve, reject) =>
        aedes.publish(
          { cmd: 'publish', topic: FLEET_TOPIC, payload, qos: 1, retain: false, dup: false } as PublishPacket,
          (err?: Error | null) => (err ? reject(err) : resolve()),
        ),
      )
      sent += 1
    }
  }
  await Promise.all(Array.from({ length: inflight }, lane))
  return sent
}

async function handle(req: Request): Promise<unknown> {
  switch (req.cmd) {
    case 'seed':
      return seed(req.file as string)
    case 'session':
      return owner()
    case 'fanOut':
      return fanOut(
        req.ids as string[],
        req.count as number,
        req.bytes as number,
        req.inflight as number,
        (req.seqBase as number) ?? 0,
        req.direct === true,
      )
    case 'broadcast':
      return broadcast(req.count as number, req.bytes as number, req.inflight as number, (req.seqBase as number) ?? 0)
    case 'countEvents':
      return countEvents(app.database.db, req.type as string, new Date(req.since as number))
    case 'gc':
      // Only with --expose-gc (the sessions benchmark): garbage left by the connects is not session memory.
      ;(globalThis as { gc?: () => void }).gc?.()
      return Boolean((globalThis as { gc?: () => void }).gc)
    case 'memory':
      return process.memoryUsage()
    case 'heapSnapshot':
      // bench/probes/session-memory.ts: what the heap holds, for bench/probes/heap-diff.ts.
      return writeHeapSnapshot(req.file as string)
    case 'close':
      await app.close()
      setImmediate(() => process.exit(0))
      return true
    default:
      throw new Error(`unknown command ${req.cmd}`)
  }
}

process.on('message', (req: Request) => {
  handle(req).then(
    (result) => send({ id: req.id, result }),
    (err: Error) => send({ id: req.id, error: err.stack ?? err.message }),
  )
})
// The parent's death ends us too: no orphaned brokers holding ports.
process.on('disconnect', () => {
  app.close().finally(() => process.exit(0))
})

send({ ready: true, httpPort: config.port, mqttPort: app.mqttPort, pid: process.pid, database: app.database.kind })
