// MQTT-3.2.0-1: the first packet the server sends a client is CONNACK. aedes restores a
// resumed session's subscriptions before it writes the CONNACK (and, with a persistence over
// the network, waits on it in between), so a message published in that window was written to
// the socket first. Deliveries to a client are held until its CONNACK is out.
import type { Aedes, Client } from 'aedes'
import { connackSent, wrapDelivery } from './aedes-internals.js'

type Waiting = Array<{ run: () => void; drop: () => void }>

/** Installs the gate on a broker; `hold` must be called for each client before its subscriptions are restored (preConnect). */
export function connackGate(aedes: Aedes): { hold(client: Client): void } {
  // Held clients: null until a delivery has to wait (most never do), then what waits. The list and
  // its close listener are made only then, so a connection that waits for nothing costs an entry.
  const held = new WeakMap<Client, Waiting | null>()

  aedes.on('connackSent', (_packet, client) => {
    const waiting = held.get(client)
    held.delete(client)
    for (const w of waiting ?? []) w.run()
  })

  /** Refused, or gone before its CONNACK: the publishers waiting on these deliveries go on. */
  function dropOnClose(client: Client, waiting: Waiting) {
    client.conn.once('close', () => {
      if (held.get(client) !== waiting) return
      held.delete(client)
      for (const w of waiting) w.drop()
    })
  }

  return {
    hold(client) {
      held.set(client, null)
      wrapDelivery(client, (deliver) => (packet, cb) => {
        // Once its connection has closed, a client is no longer held (as after its CONNACK).
        if (connackSent(client) || !held.has(client) || (client.conn as { closed?: boolean }).closed) return deliver(packet, cb)
        let waiting = held.get(client)
        if (!waiting) {
          waiting = []
          held.set(client, waiting)
          dropOnClose(client, waiting)
        }
        waiting.push({ run: () => deliver(packet, cb), drop: cb })
      })
    },
  }
}
