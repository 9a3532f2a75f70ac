// What RabbitMQ's HTTP auth backend (rabbitmq_auth_backend_http) asks, decided for a device with
// the same topic rules as the embedded broker (topic-rules.ts). RabbitMQ's MQTT plugin maps an
// MQTT topic to an AMQP routing key on the amq.topic exchange: "/" becomes "." and the filter
// wildcard "+" becomes "*" ("#" stays), so a topic check arrives as a routing key and is mapped
// back before the rules are asked. Pure functions: the routes (rabbitmq-auth-routes.ts) find the
// device and check its secret.
import { downlinkKinds, FLEET_TOPIC, uplinkKinds } from './contract.js'
import { deviceMayPublish, deviceMaySubscribe } from './topic-rules.js'

/** The exchange RabbitMQ's MQTT plugin publishes to and binds on (its `exchange` setting, by default). */
const MQTT_EXCHANGE = 'amq.topic'

/** The queues the MQTT plugin declares for a client's subscriptions, one per QoS. */
const subscriptionQueues = (clientId: string) => [`mqtt-subscription-${clientId}qos0`, `mqtt-subscription-${clientId}qos1`]

/**
 * The MQTT topic (or filter) a routing key came from. A dot inside an MQTT topic level also
 * becomes a dot, so "a.b" and "a/b" are one routing key to RabbitMQ: deciding on the routing key
 * is deciding on what RabbitMQ routes, which is what matters.
 */
function topicOfRoutingKey(routingKey: string): string {
  return routingKey
    .split('.')
    .map((word) => (word === '*' ? '+' : word))
    .join('/')
}

/** What every request names: the device (user name) and, for MQTT connections, its client id. */
export type RabbitAsk = { username: string; clientId?: string; vhost?: string }

/**
 * A device's credentials are for its MQTT session only: the client id must be its id, which also
 * keeps them off RabbitMQ's AMQP and STOMP listeners (their requests carry no client id).
 */
export const isOwnMqttSession = (ask: RabbitAsk) => ask.clientId === ask.username

export type ResourceAsk = RabbitAsk & { resource: string; name: string; permission: string }

/**
 * Exchanges and queues: the device's own subscription queues (the MQTT plugin declares, binds and
 * reads them) and reading and writing amq.topic (never configuring it). Topic rights are decided
 * separately, on each routing key.
 */
export function deviceResourceAllowed(deviceId: string, ask: ResourceAsk): boolean {
  if (ask.resource === 'queue') return subscriptionQueues(deviceId).includes(ask.name)
  if (ask.resource === 'exchange') return ask.name === MQTT_EXCHANGE && (ask.permission === 'read' || ask.permission === 'write')
  return false
}

export type TopicAsk = RabbitAsk & { name: string; permission: string; routingKey: string }

/** write: a publish to the routing key; read: a binding (an MQTT SUBSCRIBE) with the routing key as its pattern. */
export function deviceTopicAllowed(deviceId: string, ask: TopicAsk): boolean {
  if (ask.name !== MQTT_EXCHANGE) return false
  const topic = topicOfRoutingKey(ask.routingKey)
  if (ask.permission === 'write') return deviceMayPublish(deviceId, topic)
  if (ask.permission === 'read') return deviceMaySubscribe(deviceId, topic)
  return false
}

/** The permissions of a device provisioned as a RabbitMQ internal user (rabbitmq-device-users.ts). */
export type DevicePermissions = {
  resources: { configure: string; write: string; read: string }
  topics: { exchange: string; write: string; read: string }
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/**
 * What the HTTP routes answer for this device (deviceResourceAllowed, deviceTopicAllowed), as the
 * regular expressions RabbitMQ's internal backend matches: resources by name, topics by routing
 * key (a SUBSCRIBE's filter with + as *, a publish's topic, "/" as "."). The internal backend
 * treats an empty pattern as "nothing", and the fields are anchored because it does not anchor them.
 */
export function devicePermissions(deviceId: string): DevicePermissions {
  const id = escapeRegex(deviceId)
  const queues = `mqtt-subscription-${id}qos[01]`
  const exchange = escapeRegex(MQTT_EXCHANGE)
  return {
    resources: { configure: `^${queues}$`, write: `^(${queues}|${exchange})$`, read: `^(${queues}|${exchange})$` },
    topics: {
      exchange: MQTT_EXCHANGE,
      write: `^devices\\.${id}\\.up\\.(${uplinkKinds.join('|')})$`,
      // deviceMaySubscribe: devices/{own}/# or /+, one of its downlink topics or its state, the fleet topic by name.
      read: `^(${escapeRegex(FLEET_TOPIC.split('/').join('.'))}|devices\\.${id}\\.(#|\\*|${[...downlinkKinds, 'state'].join('|')}))$`,
    },
  }
}
