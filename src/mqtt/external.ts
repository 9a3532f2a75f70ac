// External-broker mode (MQTT_EXTERNAL_URL): no embedded broker starts. The service is an MQTT
// client of the external cluster (EMQX, Mosquitto, VerneMQ): it publishes downlink messages and
// consumes devices' uplink; the broker asks POST /api/device/mqtt-auth who may connect and what
// they may touch.
import mqtt, { type MqttClient } from 'mqtt'
import type { Database } from '../db/client.js'
import type { DeviceLink } from '../devices/sessions.js'
import { parseDeviceTopic, topicFor, UPLINK_FILTER } from './contract.js'
import { applyUplink, type DomainUplinkHooks } from './uplink.js'
import type { DownlinkHooks } from './downlink-hooks.js'

export type ExternalLink = DeviceLink & { client: MqttClient; close(): Promise<void> }

export async function connectExternalBroker(opts: {
  url: string
  clientId: string
  username?: string
  password?: string
  db: Database
  log: { warn: (o: object | string, m?: string) => void }
  /** The durable downlink: acknowledgements by up/ack (the broker's PUBACK to us says nothing about the device), and a resend when a device reports a new session. */
  downlink: DownlinkHooks
  /** What the domains do with uplink: log batches, status reports. */
  uplink?: DomainUplinkHooks
}): Promise<ExternalLink> {
  const client = await mqtt.connectAsync(opts.url, {
    clientId: opts.clientId,
    username: opts.username,
    password: opts.password,
    // A persistent session: uplink sent while the service restarts is delivered afterwards.
    clean: false,
    protocolVersion: 4,
    reconnectPeriod: 1000,
  })
  await client.subscribeAsync(UPLINK_FILTER, { qos: 1 })
  const pending = new Set<Promise<void>>()
  const hooks = {
    delivered: opts.downlink.delivered,
    reported: opts.downlink.reported,
    newSession: (deviceId: string) => {
      opts.downlink.resend(deviceId, {}).catch((err) => opts.log.warn({ err, deviceId }, 'could not send a device what it missed'))
    },
    ...opts.uplink,
  }
  client.on('message', (topic, payload) => {
    const t = parseDeviceTopic(topic)
    if (t?.rest[0] !== 'up' || t.rest.length !== 2) return
    const task = applyUplink(opts.db, t.deviceId, t.rest[1] as string, payload, hooks)
      .then(() => {})
      .catch((err) => opts.log.warn({ err, topic }, 'uplink failed'))
    pending.add(task)
    void task.finally(() => pending.delete(task))
  })
  return {
    client,
    async publish(deviceId, kind, payload, o = {}) {
      await client.publishAsync(topicFor(deviceId, kind), JSON.stringify(payload), { qos: 1, retain: o.retain ?? false })
    },
    // The external broker owns the sessions; a revoked secret keeps the device out from its next connect.
    async kick() {
      return false
    },
    async announce(deviceId, state, event) {
      await client.publishAsync(topicFor(deviceId, 'state'), JSON.stringify(state), { qos: 1, retain: true })
      if (event) await client.publishAsync(topicFor(deviceId, 'events'), JSON.stringify(event), { qos: 0, retain: false })
    },
    async close() {
      await Promise.allSettled([...pending])
      await client.endAsync()
    },
  }
}
