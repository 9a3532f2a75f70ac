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
import { parserOf, subscriptionsOf } from './aedes-internals.js'

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

/** Installs the checks on one client's parser (see the top of this file). */
export function guardPackets(client: Client, limits: InboundLimits, stats: GuardStats) {
  widenSubacks()
  const parser = parserOf(client)
  const conn = client.conn
  const asked = new Set<string>()
  const bucket = { tokens: limits.inboundBurst, at: Date.now() }
  const strikes = { windowStart: Date.now(), dropped: 0, count: 0 }
  const emit = parser.emit
  const windowMs = limits.inboundStrikeWindowMs ?? STRIKE_WINDOW_MS

  /** False when the client has been over its rate for STRIKES_TO_CLOSE windows in a row. */
  function admitPublish(packet: Packet): boolean {
    const now = Date.now()
    if (now - strikes.windowStart >= windowMs) {
      // A window with drops is a strike; a quiet one (or a gap of more than one) clears them.
      strikes.count = strikes.dropped > 0 && now - strikes.windowStart < 2 * windowMs ? strikes.count + 1 : 0
      strikes.windowStart = now
      strikes.dropped = 0
    }
    bucket.tokens = Math.min(limits.inboundBurst, bucket.tokens + ((now - bucket.at) / 1000) * limits.inboundRate)
    bucket.at = now
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return true
    }
    ;(packet as Marked)[OVER_RATE] = true
    stats.rateDropped += 1
    strikes.dropped += 1
    return strikes.count + 1 < STRIKES_TO_CLOSE
  }

  function capSubscriptions(packet: Packet) {
    const subs = packet.subscriptions ?? []
    const topics = subs.map((s) => s.topic)
    if (new Set(topics).size !== topics.length && packet.messageId !== undefined) {
      let pending = owed.get(conn)
      if (!pending) owed.set(conn, (pending = new Map()))
      pending.set(packet.messageId, topics)
    }
    if (limits.maxSubscriptions <= 0) return
    const held = subscriptionsOf(client)
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

  // Once the connection is being closed, what the parser still holds from the same read is not handled.
  let closing = false
  const close = (parser: unknown, reason: string) => {
    closing = true
    return emit.call(parser, 'error', new Error(reason))
  }
  parser.emit = function guarded(event: string | symbol, ...args: unknown[]) {
    if (event === 'packet') {
      if (closing) return false
      const packet = args[0] as Packet
      const field = nulField(packet)
      if (field) {
        stats.nulClosed += 1
        return close(this, `the ${field} contains U+0000 (MQTT-1.5.3-2)`)
      }
      if (packet.cmd === 'publish' && limits.inboundRate > 0 && !admitPublish(packet)) {
        stats.rateClosed += 1
        return close(this, `over ${limits.inboundRate} messages per second for ${(STRIKES_TO_CLOSE * windowMs) / 1000} s`)
      }
      if (packet.cmd === 'subscribe') capSubscriptions(packet)
      if (packet.cmd === 'unsubscribe') for (const f of packet.unsubscriptions ?? []) asked.delete(f)
    }
    return emit.call(this, event, ...args)
  }
}
