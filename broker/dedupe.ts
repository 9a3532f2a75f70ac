// Which copies of a message a client should not get twice. aedes skips a message for a client
// when its broker counter is not above the last one delivered to that client: that suppresses
// the second copy an overlapping subscription (devices/{id}/cmd and devices/{id}/#) would get,
// but it also drops messages that finish publishing out of order. Counters are taken when a
// publish starts, and a QoS 1 message to a persistent session finishes only after its offline
// copy is stored while a QoS 0 one does not, so a command followed at once by a presence event
// never reached the device (test/broker/ordering.test.ts). Here a message is a duplicate only if
// this very message (broker id and counter) was among the client's last few deliveries.
import type { Client } from 'aedes'
import { setDuplicates, wrapDelivery } from './aedes-internals.js'

/** Overlapping subscriptions deliver their copies back to back, in one emit: a short memory is enough. */
const REMEMBERED = 4

type State = { counter: number; ids: Array<string | undefined>; counters: number[]; next: number }

// aedes reads `duplicates[brokerId]` and, when it is below the counter, delivers and stores the
// counter. Answering "the counter itself" for a remembered message and "one below" otherwise turns
// that monotonic check into a membership test, while aedes keeps its own handling of duplicates
// (a persistent session's stored copy is cleared).
const handler: ProxyHandler<State> = {
  get(state, brokerId) {
    for (let i = 0; i < REMEMBERED; i++) {
      if (state.counters[i] === state.counter && state.ids[i] === brokerId) return state.counter
    }
    return state.counter - 1
  },
  set(state, brokerId, counter) {
    state.ids[state.next] = brokerId as string
    state.counters[state.next] = counter as number
    state.next = (state.next + 1) % REMEMBERED
    return true
  },
}

/** Installs the identity-based duplicate check on a client before it subscribes. */
export function dedupeByIdentity(client: Client): void {
  const state: State = { counter: 0, ids: new Array(REMEMBERED), counters: new Array(REMEMBERED).fill(-1), next: 0 }
  setDuplicates(client, new Proxy(state, handler))
  // aedes checks `duplicates` synchronously at the start of both: tell it which message it is.
  wrapDelivery(client, (deliver) => (packet, cb) => {
    state.counter = packet.brokerCounter ?? 0
    deliver(packet, cb)
  })
}
