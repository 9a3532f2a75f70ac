// MQTT-3.2.0-1: the first packet the server sends a client is CONNACK. aedes restores a
// resumed session's subscriptions before it writes the CONNACK (and, with a persistence over
// the network, waits on it in between), so a message published in that window was written to
// the socket first. Deliveries to a client are held until its CONNACK is out.
import type { Aedes, Client } from 'aedes'
import { connackSent, wrapDelivery } from './aedes-internals.js'

/** Installs the gate on a broker; `hold` must be called for each client before its subscriptions are restored (preConnect). */
export function connackGate(aedes: Aedes): { hold(client: Client): void } {
  const held = new WeakMap<Client, Array<{ run: () => void; drop: () => void }>>()

  aedes.on('connackSent', (_packet, client) => {
    const waiting = held.get(client)
    held.delete(client)
    for (const w of waiting ?? []) w.run()
  })

  return {
    hold(client) {
      const waiting: Array<{ run: () => void; drop: () => void }> = []
      held.set(client, waiting)
      wrapDelivery(client, (deliver) => (packet, cb) => {
        if (connackSent(client) || !held.has(client)) return deliver(packet, cb)
        waiting.push({ run: () => deliver(packet, cb), drop: cb })
      })
      // Refused, or gone before its CONNACK: the publishers waiting on these deliveries go on.
      client.conn.once('close', () => {
        if (held.get(client) !== waiting) return
        held.delete(client)
        for (const w of waiting) w.drop()
      })
    },
  }
}
