// Presence on RabbitMQ, from its event exchange (rabbitmq_event_exchange): the broker itself
// announces every connection.created and connection.closed on amq.rabbitmq.event, which we read
// over AMQP. Chosen over a last will plus a retained "online" message because the broker sees
// every connection end, whatever the device's firmware set as its will (the embedded broker sets
// the will itself; RabbitMQ cannot), a device cannot forge it, and a durable queue keeps what
// happened while the service was down (docs/rabbitmq.md). The same Events are written as on the
// embedded broker (src/devices/presence.ts), with the same reasons where RabbitMQ lets us know them:
// kicked (we closed it, or its secret is gone), takeover (a newer connection of the device came
// first), otherwise client_disconnect: connection.closed carries no cause in RabbitMQ 3.10.
import amqp from 'amqplib'
import type { Database } from '../db/client.js'
import { findDeviceByConnection } from '../devices/connection-repository.js'
import { createDevicePresence } from '../devices/presence.js'
import type { DeviceOwner } from '../devices/presence-store.js'
import { topicFor, type DisconnectReason, type PresenceChange } from './contract.js'
import { directLookup } from './credentials.js'

const EVENT_EXCHANGE = 'amq.rabbitmq.event'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** A queue nobody consumed for this long is removed by RabbitMQ (a service taken away for good). */
const QUEUE_EXPIRES_MS = 24 * 3600_000

type Headers = Record<string, unknown>
/** The MQTT client id of a connection.created event: RabbitMQ 3.10 sends its variable map as an Erlang term, `#{<<"client_id">> => <<"…">>}`. */
const clientIdOf = (h: Headers) => /<<"client_id">>\s*=>\s*<<"([^"]*)">>/.exec(text(h.variable_map))?.[1]
const text = (v: unknown) => (typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : v === undefined ? '' : String(v))
/** RabbitMQ prints addresses as Erlang tuples: "{127,0,0,1}". */
const address = (v: unknown) =>
  text(v)
    .replace(/^\{(.*)\}$/, '$1')
    .replaceAll(',', '.') || null

export type RabbitPresence = {
  /** Marks the device's next close as a kick; resolves once that close is recorded (or after `waitMs`). */
  expectKick(deviceId: string, waitMs?: number): { recorded: Promise<void>; cancel(): void }
  close(): Promise<void>
}

export async function startRabbitPresence(opts: {
  url: string
  queue: string
  vhost: string
  db: Database
  /** Publishes through the service's MQTT client: the retained devices/{id}/state and devices/{id}/events. */
  publish(topic: string, body: object, retain: boolean): Promise<void>
  log: { warn: (o: object | string, m?: string) => void }
  onPresence?: (change: PresenceChange) => void
  /**
   * A device logged in with a client id not its own, which only an internal user can (RabbitMQ's
   * internal backend does not see the client id; our HTTP routes refuse it): it took over that
   * client id's connection. Not recorded as presence.
   */
  onForeignClientId?: (deviceId: string, clientId: string) => Promise<void>
}): Promise<RabbitPresence> {
  const presence = createDevicePresence({
    db: opts.db,
    log: opts.log,
    onPresence: opts.onPresence,
    live: async (deviceId, { state, event }) => {
      if (state) await opts.publish(topicFor(deviceId, 'state'), state, true)
      if (event) await opts.publish(topicFor(deviceId, 'events'), event, false)
    },
  })
  const lookup = directLookup(opts.db)
  /** Connections seen created: connection id → device and owner. */
  const live = new Map<string, { deviceId: string; owner?: DeviceOwner }>()
  /** Each device's newest connection. */
  const current = new Map<string, string>()
  const kicks = new Map<string, Set<() => void>>()

  async function connected(h: Headers, connectionId: string, at: Date) {
    const deviceId = text(h.user)
    const dev = await lookup(deviceId)
    if (!dev) return
    const owner = { userId: dev.userId, organizationId: dev.organizationId, name: dev.name }
    live.set(connectionId, { deviceId, owner })
    current.set(deviceId, connectionId)
    await presence.connected({
      deviceId,
      transport: 'rabbitmq',
      owner,
      connectionId,
      at,
      data: { clientId: deviceId, connectionId, remoteAddress: address(h.peer_host), broker: 'rabbitmq', node: text(h.node) },
    })
  }

  async function closed(connectionId: string, at: Date) {
    const known = live.get(connectionId)
    live.delete(connectionId)
    // Created before this service started (or before a restart): the database knows whose it is.
    const deviceId = known?.deviceId ?? (await findDeviceByConnection(opts.db, connectionId))
    if (!deviceId) return
    await presence.queue(deviceId, async () => {
      const dev = await lookup(deviceId)
      const waiting = kicks.get(deviceId)
      const takenOver = current.has(deviceId) && current.get(deviceId) !== connectionId
      if (!takenOver) current.delete(deviceId)
      // Gone with the device: its events were deleted with it.
      if (dev) {
        const reason: DisconnectReason = takenOver ? 'takeover' : waiting?.size || !dev.secretHash ? 'kicked' : 'client_disconnect'
        await presence.write.disconnected({
          deviceId,
          transport: 'rabbitmq',
          owner: known?.owner ?? { userId: dev.userId, organizationId: dev.organizationId, name: dev.name },
          connectionId,
          at,
          reason,
          takenOver,
          data: { clientId: deviceId, connectionId, broker: 'rabbitmq' },
        })
      }
      if (!takenOver) for (const done of waiting ?? []) done()
    })
  }

  const connection = await amqp.connect(opts.url)
  connection.on('error', (err) => opts.log.warn({ err }, 'RabbitMQ presence: AMQP connection error'))
  const channel = await connection.createChannel()
  // One durable queue per service (shared by its instances, read by one at a time, in order): events
  // that happen while the service restarts wait in it.
  await channel.assertQueue(opts.queue, {
    durable: true,
    arguments: { 'x-single-active-consumer': true, 'x-expires': QUEUE_EXPIRES_MS },
  })
  await channel.bindQueue(opts.queue, EVENT_EXCHANGE, 'connection.created')
  await channel.bindQueue(opts.queue, EVENT_EXCHANGE, 'connection.closed')
  await channel.prefetch(500)
  const { consumerTag } = await channel.consume(opts.queue, (msg) => {
    if (!msg) return
    const h = (msg.properties.headers ?? {}) as Headers
    const connectionId = `rabbitmq:${text(h.pid)}`
    const at = new Date(Number(h.timestamp_in_ms) || Date.now())
    const created = msg.fields.routingKey === 'connection.created'
    // Only devices' MQTT connections in our vhost: not the service's own, not AMQP clients.
    const ours = !created || (UUID.test(text(h.user)) && text(h.protocol).includes('MQTT') && text(h.vhost) === opts.vhost)
    const clientId = created ? clientIdOf(h) : undefined
    const foreign = ours && clientId !== undefined && clientId !== text(h.user)
    const task = !ours
      ? Promise.resolve()
      : foreign
        ? (opts.onForeignClientId?.(text(h.user), clientId) ?? Promise.resolve())
        : created
          ? connected(h, connectionId, at)
          : closed(connectionId, at)
    // Acknowledged once written: a service that stops first gets the event again.
    const ack = () => {
      try {
        channel.ack(msg)
      } catch {
        // The channel closed first: RabbitMQ gives the event to the next consumer.
      }
    }
    task.then(ack, (err: unknown) => {
      opts.log.warn({ err, connectionId }, 'RabbitMQ presence: event not recorded')
      ack()
    })
  })

  return {
    expectKick(deviceId, waitMs = 5000) {
      let done!: () => void
      const recorded = new Promise<void>((resolve) => {
        done = resolve
      })
      const set = kicks.get(deviceId) ?? new Set()
      kicks.set(deviceId, set)
      const timer = setTimeout(() => cancel(), waitMs)
      const finish = () => {
        clearTimeout(timer)
        set.delete(finish)
        if (!set.size && kicks.get(deviceId) === set) kicks.delete(deviceId)
        done()
      }
      const cancel = finish
      set.add(finish)
      return { recorded, cancel }
    },
    async close() {
      await channel.cancel(consumerTag).catch(() => {})
      await presence.settled()
      await connection.close().catch(() => {})
    },
  }
}
