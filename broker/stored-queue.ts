// What a client is sent from its stored queue when its session starts, decided per message the
// way aedes decides any delivery: its authorizeForward answers no while the queue is emptied, and
// aedes then clears the message from the persistence. Works on any aedes persistence (memory,
// Redis). Two rules, each optional:
// - last-value topics: where only the newest message matters (a desired config, the picture to
//   show), only the newest stored message of each such topic is sent, not every one it replaced
//   while the client was away (RabbitMQ calls this a last-value queue);
// - a session the broker did not find (CONNACK session-present 0) is sent nothing it stored: such
//   a queue is left over from a session whose subscriptions were lost (Redis restarted without
//   its data while the brokers still routed to it), and delivering it would put it ahead of what
//   the client missed before it.
import { Readable } from 'node:stream'
import type { Client, PublishPacket } from 'aedes'

type Stored = { topic: string; brokerId?: string; brokerCounter?: number }
type QueueStore = { outgoingStream(client: { id: string }): AsyncIterable<Stored> }

const keyOf = (p: { brokerId?: string; brokerCounter?: number }) => `${p.brokerId}:${p.brokerCounter}`

export type StoredQueueRules = {
  /** Topics where only the newest message matters. */
  lastValue?: (topic: string) => boolean
  /** Whether nothing stored is to be sent to this client (asked once its CONNACK is written). */
  dropStored?: (client: Client) => boolean
}

export type StoredQueue = {
  /** The persistence to give aedes: its outgoingStream notes what each client's stored queue holds. */
  persistence<P extends object>(persistence: P): P
  /** For authorizeForward: false for a stored message the rules leave out. */
  forward(client: Client, packet: PublishPacket): boolean
}

export function storedQueue(rules: StoredQueueRules): StoredQueue {
  /** Per client whose stored queue is being emptied: its messages, and those a newer one on their topic replaced. */
  const queues = new WeakMap<object, { stored: Set<string>; replaced: Set<string> }>()

  async function* noting(store: QueueStore, client: { id: string }): AsyncGenerator<Stored> {
    // The stored queue is bounded (the offline queue limit, the persistence's own session bound),
    // and aedes-persistence-redis reads the whole list in one call anyway.
    const queued: Stored[] = []
    for await (const p of store.outgoingStream(client)) queued.push(p)
    if (!queued.length) {
      queues.delete(client)
      return
    }
    const newest = new Map<string, string>()
    if (rules.lastValue) for (const p of queued) if (rules.lastValue(p.topic)) newest.set(p.topic, keyOf(p))
    const replaced = new Set<string>()
    for (const p of queued) if (newest.has(p.topic) && newest.get(p.topic) !== keyOf(p)) replaced.add(keyOf(p))
    queues.set(client, { stored: new Set(queued.map(keyOf)), replaced })
    yield* queued
  }

  return {
    persistence(persistence) {
      const store = persistence as unknown as QueueStore
      return new Proxy(persistence, {
        get(target, prop) {
          if (prop === 'outgoingStream') return (client: { id: string }) => Readable.from(noting(store, client))
          const value = Reflect.get(target, prop, target)
          // Bound to the persistence itself: aedes-persistence-redis keeps its state in private fields.
          return typeof value === 'function' ? value.bind(target) : value
        },
        set(target, prop, value) {
          return Reflect.set(target, prop, value, target)
        },
      })
    },
    forward(client, packet) {
      const queue = queues.get(client)
      if (!queue) return true
      const key = keyOf(packet as Stored)
      if (!queue.stored.has(key)) return true
      if (queue.replaced.has(key)) return false
      return !rules.dropStored?.(client)
    },
  }
}
