// What RabbitMQ's HTTP auth backend (rabbitmq_auth_backend_http) asks, decided for a device with
// the same topic rules as the embedded broker (topic-rules.ts). RabbitMQ's MQTT plugin maps an
// MQTT topic to an AMQP routing key on the amq.topic exchange: "/" becomes "." and the filter
// wildcard "+" becomes "*" ("#" stays), so a topic check arrives as a routing key and is mapped
// back before the rules are asked. Pure functions: the routes (rabbitmq-auth-routes.ts) find the
// device and check its secret.
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
