// The topic rights of a device, as a table every broker the service runs with must enforce alike:
// the embedded broker (test/broker/acl-matrix.test.ts) and RabbitMQ through our auth backend
// (test/broker/rabbitmq.test.ts). `own` is the device, `other` another paired device.
import { FLEET_TOPIC } from '../../src/mqtt/contract.js'

export type AclCase = { action: 'subscribe' | 'publish'; topic: string; allowed: boolean }

export const ACL_MATRIX = (own: string, other: string): AclCase[] => [
  ...['prompt', 'image', 'config', 'cmd', 'ota', 'state'].map((k) => ({
    action: 'subscribe' as const,
    topic: `devices/${own}/${k}`,
    allowed: true,
  })),
  { action: 'subscribe', topic: `devices/${own}/+`, allowed: true },
  { action: 'subscribe', topic: `devices/${own}/#`, allowed: true },
  { action: 'subscribe', topic: FLEET_TOPIC, allowed: true },
  { action: 'subscribe', topic: `devices/${other}/cmd`, allowed: false },
  { action: 'subscribe', topic: `devices/${other}/#`, allowed: false },
  { action: 'subscribe', topic: 'devices/+/cmd', allowed: false },
  { action: 'subscribe', topic: 'devices/#', allowed: false },
  { action: 'subscribe', topic: '#', allowed: false },
  { action: 'subscribe', topic: `devices/${own}/up/status`, allowed: false },
  { action: 'subscribe', topic: `devices/${own}/+/+`, allowed: false },
  ...['status', 'ack', 'log', 'ota'].map((k) => ({ action: 'publish' as const, topic: `devices/${own}/up/${k}`, allowed: true })),
  { action: 'publish', topic: `devices/${own}/cmd`, allowed: false },
  { action: 'publish', topic: `devices/${own}/state`, allowed: false },
  { action: 'publish', topic: `devices/${own}/up/other`, allowed: false },
  { action: 'publish', topic: `devices/${other}/up/status`, allowed: false },
  { action: 'publish', topic: FLEET_TOPIC, allowed: false },
]
