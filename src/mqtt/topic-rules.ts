// Who may touch which topic of the layout in contract.ts (MQTT 3.1.1 section 4.7 for topic names
// and filters): the embedded broker's hooks and the external broker's ACL hook both ask here.
import { downlinkKinds, FLEET_TOPIC, parseDeviceTopic, uplinkKinds } from './contract.js'

const hasWildcard = (s: string) => s.includes('+') || s.includes('#')

/**
 * A device may subscribe to its own downlink topics, or a filter that only reaches them
 * (devices/{own}/+ or devices/{own}/#, which also cover its own state). Anything reaching
 * another device, the $SYS tree or the root is refused. The fleet topic is allowed by exact name only.
 */
export function deviceMaySubscribe(deviceId: string, filter: string): boolean {
  if (filter === FLEET_TOPIC) return true
  const t = parseDeviceTopic(filter)
  if (!t || t.deviceId !== deviceId) return false
  const [first, ...more] = t.rest
  if (first === '#' || (first === '+' && more.length === 0)) return true
  if (hasWildcard(t.rest.join('/'))) return false
  return t.rest.length === 1 && ((downlinkKinds as readonly string[]).includes(first as string) || first === 'state')
}

/** A device publishes only to its own uplink: devices/{own}/up/status, up/ack and up/log. */
export function deviceMayPublish(deviceId: string, topic: string): boolean {
  const t = parseDeviceTopic(topic)
  return (
    !!t &&
    t.deviceId === deviceId &&
    t.rest.length === 2 &&
    t.rest[0] === 'up' &&
    (uplinkKinds as readonly string[]).includes(t.rest[1] as string)
  )
}

/** The device whose state or events an app filter names, or null when the filter is not one an app may use. */
export function appSubscriptionTarget(filter: string): string | null {
  const t = parseDeviceTopic(filter)
  if (!t || hasWildcard(t.deviceId) || t.rest.length !== 1) return null
  return t.rest[0] === 'state' || t.rest[0] === 'events' ? t.deviceId : null
}
