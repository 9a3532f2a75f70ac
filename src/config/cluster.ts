// Several instances as one service: each node's fixed id and how they tell each other they live.
import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import type { Keeper } from './data-dir.js'
import { type Section, type Values, variable } from './variables.js'

export const cluster = {
  title: 'Cluster',
  intro: 'Instances sharing one PostgreSQL and one Redis form a cluster ([deployment.md](deployment.md)).',
  variables: {
    brokerId: variable(
      'MQTT_BROKER_ID',
      z
        .string()
        .regex(/^[\w.-]{1,64}$/)
        .optional(),
      "this node's fixed id (its wills, sessions and schedule claims are recognised as its own after a restart)",
      { default: 'generated into `DATA_DIR/broker-id`', values: 'letters, digits, `_`, `.`, `-` (up to 64)' },
    ),
    heartbeatMs: variable(
      'MQTT_HEARTBEAT_MS',
      z.coerce.number().int().min(100).max(600_000).default(5000),
      'how often nodes tell each other they are alive (milliseconds); a node silent for three intervals is dead (its devices go offline, its wills are published)',
    ),
  },
} satisfies Section

/** This node's fixed id: MQTT_BROKER_ID, or generated once into DATA_DIR/broker-id. */
export function nodeIdOf({ brokerId }: Values<typeof cluster.variables>, keep: Keeper): string {
  return brokerId ?? keep('broker-id', () => `node-${randomBytes(6).toString('hex')}`)
}
