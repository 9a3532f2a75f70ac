// What aedes does not check on the way in, checked as each packet leaves the parser, before aedes
// sees it:
//  - MQTT-1.5.3-2: a string with U+0000 (topic, filter, client id, user name, will topic) closes
//    the connection.
//  - MQTT-3.8.4-5: a SUBACK has one return code per filter of the SUBSCRIBE, duplicates included;
//    aedes merges duplicate filters and would answer fewer codes (mqtt.js then drops the connection).
//  - a cap on the filters one client may hold (asked for, granted or not, this connection).
//  - an inbound PUBLISH rate per client: the excess is accepted on the wire (MQTT 3.1.1 has no
//    negative PUBACK) and delivered to nobody; a client that keeps exceeding it is disconnected.
import mqttPacket from 'mqtt-packet'
import type { Client } from 'aedes'
import { parserOf, subscriptionsOf, type PacketParser } from './aedes-internals.js'

export type InboundLimits = {
  /** Filters one client may hold; 0 = no cap. */
  maxSubscriptions: number
  /** PUBLISH packets per second per client, on average; 0 = no limit. */
  inboundRate: number
  /** How many may come at once above the average. */
  inboundBurst: number
  /** The window in which a drop is a strike (default 5 s; shorter in tests). */
  inboundStrikeWindowMs?: number
}

export type GuardStats = { nulClosed: number; subscriptionsCapped: number; rateDropped: number; rateClosed: number }

/** Consecutive windows with dropped messages before the client is disconnected: a burst is not abuse, a flood is. */
const STRIKE_WINDOW_MS = 5000
const STRIKES_TO_CLOSE = 3

type Marked = { [OVER_RATE]?: true; [CAPPED]?: true }
const OVER_RATE = Symbol('over inbound rate')
const CAPPED = Symbol('over the subscription cap')

/** The PUBLISH came above the client's rate: deliver it to nobody. */
export const isOverRate = (packet: object): boolean => (packet as Marked)[OVER_RATE] === true
/** The filter is past the client's cap: refuse it (0x80). */
export const isCapped = (sub: object): boolean => (sub as Marked)[CAPPED] === true

type Packet = {
  cmd: string
  topic?: string
  messageId?: number
  clientId?: string
  username?: string
  will?: { topic?: string }
  subscriptions?: Array<{ topic: string; qos: number }>
  unsubscriptions?: string[]
}

function nulField(p: Packet): string | undefined {
  const has = (s: unknown) => typeof s === 'string' && s.includes('\u0000')
  if (has(p.topic)) return 'topic'
  if (has(p.clientId)) return 'client id'
  if (has(p.username)) return 'user name'
  if (has(p.will?.topic)) return 'will topic'
  if (p.subscriptions?.some((s) => has(s.topic))) return 'topic filter'
  if (p.unsubscriptions?.some(has)) return 'topic filter'
  return undefined
}

// SUBACK codes owed per connection and message id, for SUBSCRIBEs that named a filter twice.
const owed = new WeakMap<object, Map<number, string[]>>()
let patched = false

/**
 * aedes writes every packet with mqtt-packet's writeToStream; a SUBACK for a SUBSCRIBE with
 * duplicate filters is widened there to one code per filter (the code of the subscription that
 * stands, as aedes keeps the last of duplicates).
 */
function widenSubacks() {
  if (patched) return
  patched = true
  const write = mqttPacket.writeToStream
  mqttPacket.writeToStream = function widened(this: unknown, packet, stream, opts) {
    if (packet.cmd === 'suback' && packet.messageId !== undefined) {
      const pending = owed.get(stream)
      const filters = pending?.get(packet.messageId)
      if (filters) {
        pending!.delete(packet.messageId)
        const unique = [...new Set(filters)]
        const granted = packet.granted as number[]
        if (granted.length === unique.length) {
          const byFilter = new Map(unique.map((f, i) => [f, granted[i]!]))
          packet = { ...packet, granted: filters.map((f) => byFilter.get(f)!) }
        }
      }
    }
    return write.call(this, packet, stream, opts)
  } as typeof write
}

/**
 * What one server checks on every connection: its limits, where it counts what it refused, and
 * what it does with a packet over the size limit (optional: guardPackets alone leaves the size be).
 */
export type PacketGuard = {
  limits: InboundLimits
  stats: GuardStats
  /** Largest remaining length accepted; 0 or absent = no limit. */
  maxPacketSize?: number
  /** Told when a packet over maxPacketSize closes the connection, before the parser errors. */
  onTooLarge?: (client: Client) => void
}

const GUARD = Symbol('packet guard')

/**
 * One client's state, on its parser (the only thing per connection: the checks themselves are
 * installed once on the parser's prototype). Plain fields, so that an idle connection holds one
 * small object rather than a set of closures, and the filter set only once the client subscribes.
 */
class ClientGuard {
  /** Filters asked for on this connection, granted or not (created by the first SUBSCRIBE). */
  asked: Set<string> | undefined = undefined
  /** Token bucket of the inbound PUBLISH rate. */
  tokens: number
  at: number
  /** The current strike window: when it started and how many messages it dropped; strikes in a row. */
  windowStart: number
  dropped = 0
  strikes = 0
  /** Once the connection is being closed, what the parser still holds from the same read is not handled. */
  closing = false
  constructor(
    readonly client: Client,
    readonly conn: object,
    readonly guard: PacketGuard,
  ) {
    const now = Date.now()
    this.tokens = guard.limits.inboundBurst
    this.at = now
    this.windowStart = now
  }
}

type GuardedParser = PacketParser & { [GUARD]?: ClientGuard }

/** False when the client has been over its rate for STRIKES_TO_CLOSE windows in a row. */
function admitPublish(g: ClientGuard, packet: Packet): boolean {
  const { limits, stats } = g.guard
  const windowMs = limits.inboundStrikeWindowMs ?? STRIKE_WINDOW_MS
  const now = Date.now()
  if (now - g.windowStart >= windowMs) {
    // A window with drops is a strike; a quiet one (or a gap of more than one) clears them.
    g.strikes = g.dropped > 0 && now - g.windowStart < 2 * windowMs ? g.strikes + 1 : 0
    g.windowStart = now
    g.dropped = 0
  }
  g.tokens = Math.min(limits.inboundBurst, g.tokens + ((now - g.at) / 1000) * limits.inboundRate)
  g.at = now
  if (g.tokens >= 1) {
    g.tokens -= 1
    return true
  }
  ;(packet as Marked)[OVER_RATE] = true
  stats.rateDropped += 1
  g.dropped += 1
  return g.strikes + 1 < STRIKES_TO_CLOSE
}

function capSubscriptions(g: ClientGuard, packet: Packet) {
  const { limits, stats } = g.guard
  const subs = packet.subscriptions ?? []
  const topics = subs.map((s) => s.topic)
  if (new Set(topics).size !== topics.length && packet.messageId !== undefined) {
    let pending = owed.get(g.conn)
    if (!pending) owed.set(g.conn, (pending = new Map()))
    pending.set(packet.messageId, topics)
  }
  if (limits.maxSubscriptions <= 0) return
  const asked = (g.asked ??= new Set())
  const held = subscriptionsOf(g.client)
  // Held now: asked for on this connection, or restored with a persistent session.
  let total = asked.size
  for (const f in held) if (!asked.has(f)) total += 1
  const capped = new Set<string>()
  for (const sub of subs) {
    if (!capped.has(sub.topic) && (asked.has(sub.topic) || held[sub.topic])) continue
    if (capped.has(sub.topic) || total >= limits.maxSubscriptions) {
      // Every occurrence: aedes keeps the last of duplicate filters.
      capped.add(sub.topic)
      ;(sub as Marked)[CAPPED] = true
      stats.subscriptionsCapped += 1
    } else {
      asked.add(sub.topic)
      total += 1
    }
  }
}

function closeFor(g: ClientGuard, parser: PacketParser, emit: PacketParser['emit'], reason: string): boolean {
  g.closing = true
  return emit.call(parser, 'error', new Error(reason))
}

const patchedParsers = new WeakSet<object>()

/**
 * Installs the checks on the prototype of mqtt-packet's parser, once: a parser without a client
 * guard (an MQTT client's, or a connection not yet guarded) behaves exactly as before.
 */
function patchParser(proto: PacketParser) {
  if (patchedParsers.has(proto)) return
  patchedParsers.add(proto)
  const emit = proto.emit
  const parseLength = proto._parseLength
  proto.emit = function guardedEmit(this: GuardedParser, event: string | symbol, ...args: unknown[]) {
    const g = this[GUARD]
    if (g === undefined || event !== 'packet') return emit.call(this, event, ...args)
    if (g.closing) return false
    const { limits, stats } = g.guard
    const packet = args[0] as Packet
    const field = nulField(packet)
    if (field) {
      stats.nulClosed += 1
      return closeFor(g, this, emit, `the ${field} contains U+0000 (MQTT-1.5.3-2)`)
    }
    if (packet.cmd === 'publish' && limits.inboundRate > 0 && !admitPublish(g, packet)) {
      stats.rateClosed += 1
      const windowMs = limits.inboundStrikeWindowMs ?? STRIKE_WINDOW_MS
      return closeFor(g, this, emit, `over ${limits.inboundRate} messages per second for ${(STRIKES_TO_CLOSE * windowMs) / 1000} s`)
    }
    if (packet.cmd === 'subscribe') capSubscriptions(g, packet)
    if (packet.cmd === 'unsubscribe' && g.asked) for (const f of packet.unsubscriptions ?? []) g.asked.delete(f)
    return emit.call(this, event, ...args)
  }
  /** Refuses a packet as soon as its fixed header announces a length over the limit. */
  proto._parseLength = function guardedParseLength(this: GuardedParser) {
    const done = parseLength.call(this)
    const g = this[GUARD]
    const max = g?.guard.maxPacketSize
    if (done && max && this.packet.length > max) {
      g.guard.onTooLarge?.(g.client)
      this._emitError(new Error(`packet of ${this.packet.length} bytes exceeds the ${max} byte limit`))
      return false
    }
    return done
  }
}

/** Installs the checks on one client's parser (see the top of this file). */
export function guardPackets(client: Client, guard: PacketGuard) {
  widenSubacks()
  const parser = parserOf(client) as GuardedParser
  patchParser(Object.getPrototypeOf(parser) as PacketParser)
  parser[GUARD] = new ClientGuard(client, client.conn, guard)
}
