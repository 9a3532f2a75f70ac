// MQTT over in-memory streams: the bare broker (broker/server.ts) and raw clients on stream pairs,
// no sockets, no app, as aedes' own tests do. For broker behaviour the app adds nothing to.
import { Duplex } from 'node:stream'
import mqttPacket from 'mqtt-packet'
import type { Test } from 'tap'
import { createMqttServer, defaultLimits, type BrokerHooks, type BrokerLimits, type MqttServer } from '../../broker/server.js'

/**
 * Two connected ends: what one writes the other reads; ending one ends the other's reading, and
 * destroying one destroys both, as a closed socket does (node:stream's duplexPair needs Node 22).
 */
function streamPair(): [Duplex, Duplex] {
  const end = (other: () => Duplex) =>
    new Duplex({
      read() {},
      write(chunk, _encoding, done) {
        other().push(chunk)
        done()
      },
      final(done) {
        other().push(null)
        done()
      },
      destroy(err, done) {
        const o = other()
        if (!o.destroyed) o.destroy()
        done(err)
      },
    })
  const a: Duplex = end(() => b)
  const b: Duplex = end(() => a)
  return [a, b]
}

/** A bare broker with these limits (the connection rate off unless given) and hooks, closed when `t` ends. */
export async function bareBroker(t: Test, limits: Partial<BrokerLimits> = {}, hooks: BrokerHooks = {}) {
  const rejected: string[] = []
  const server = await createMqttServer({
    id: `memory-${Math.random().toString(16).slice(2)}`,
    limits: { ...defaultLimits, connectRate: 0, ...limits },
    hooks,
    onReject: (reason) => rejected.push(reason),
  })
  t.teardown(() => server.close())
  return { server, rejected }
}

type Packet = Record<string, unknown> & { cmd: string }

export type RawClient = {
  /** Every byte the broker sent. */
  received(): Buffer
  closed: Promise<void>
  isClosed(): boolean
  write(bytes: Buffer): void
  send(packet: object): void
  /** The next packet of this type the broker sent (earlier unclaimed ones first); rejects if the connection closes first. */
  next(cmd: string): Promise<Packet>
  /** How many packets of this type the broker sent so far. */
  count(cmd: string): number
}

/** A client that writes raw bytes to the broker over an in-memory stream, as if from `remoteAddress`. */
export function rawClient(server: MqttServer, remoteAddress = '192.0.2.1'): RawClient {
  const [mine, theirs] = streamPair()
  let bytes = Buffer.alloc(0)
  let isClosed = false
  const parser = mqttPacket.parser({ protocolVersion: 4 })
  const unclaimed: Packet[] = []
  const waiting: Array<{ cmd: string; resolve: (p: Packet) => void }> = []
  const counts = new Map<string, number>()
  parser.on('packet', (p) => {
    const packet = p as unknown as Packet
    counts.set(packet.cmd, (counts.get(packet.cmd) ?? 0) + 1)
    const i = waiting.findIndex((w) => w.cmd === packet.cmd)
    if (i >= 0) waiting.splice(i, 1)[0]!.resolve(packet)
    else unclaimed.push(packet)
  })
  mine.on('data', (chunk: Buffer) => {
    bytes = Buffer.concat([bytes, chunk])
    parser.parse(chunk)
  })
  mine.on('error', () => {})
  const closed = new Promise<void>((resolve) =>
    mine.once('close', () => {
      isClosed = true
      resolve()
    }),
  )
  server.handleStream(theirs, remoteAddress)
  return {
    received: () => bytes,
    closed,
    isClosed: () => isClosed,
    write: (b) => {
      if (!mine.destroyed) mine.write(b)
    },
    send(packet) {
      if (!mine.destroyed) mine.write(mqttPacket.generate(packet as mqttPacket.Packet))
    },
    next: (cmd) =>
      new Promise((resolve, reject) => {
        const i = unclaimed.findIndex((p) => p.cmd === cmd)
        if (i >= 0) return resolve(unclaimed.splice(i, 1)[0]!)
        waiting.push({ cmd, resolve })
        closed.then(() => reject(new Error(`closed before a ${cmd}`)))
      }),
    count: (cmd) => counts.get(cmd) ?? 0,
  }
}

const str = (s: string) => {
  const b = Buffer.from(s, 'utf8')
  const len = Buffer.alloc(2)
  len.writeUInt16BE(b.length)
  return Buffer.concat([len, b])
}

/** MQTT's variable-length "remaining length" (section 2.2.3). */
export function remainingLength(n: number): number[] {
  const out: number[] = []
  do {
    let byte = n % 128
    n = Math.floor(n / 128)
    if (n > 0) byte |= 0x80
    out.push(byte)
  } while (n > 0)
  return out
}

/**
 * A hand-built MQTT 3.1.1 CONNECT (section 3.1). By hand because encoders refuse what the broker
 * must refuse itself (mqtt-packet will not write an empty client id with a persistent session).
 */
export function connectBytes(o: { clientId: string; username?: string; password?: string; clean?: boolean; keepalive?: number }): Buffer {
  const ka = Buffer.alloc(2)
  ka.writeUInt16BE(o.keepalive ?? 30)
  const flags = (o.username !== undefined ? 0x80 : 0) | (o.password !== undefined ? 0x40 : 0) | ((o.clean ?? true) ? 0x02 : 0)
  const body = Buffer.concat([
    str('MQTT'),
    Buffer.from([4, flags]),
    ka,
    str(o.clientId),
    ...(o.username !== undefined ? [str(o.username)] : []),
    ...(o.password !== undefined ? [str(o.password)] : []),
  ])
  return Buffer.concat([Buffer.from([0x10, ...remainingLength(body.length)]), body])
}

/** `promise`, or a rejection naming `what` after `ms` (so a broker that fails to close fails the test instead of hanging it). */
export function within<T>(promise: Promise<T>, what: string, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}
