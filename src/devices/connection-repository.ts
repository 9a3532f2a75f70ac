// Which device a live connection id belongs to: for presence from an external broker whose
// disconnect notice names the connection only (RabbitMQ's connection.closed), after the service
// restarted and lost what it remembered. Kept apart from repository.ts, which it does not change.
import { eq } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { device } from './tables.js'

/** The device whose live connection is `connectionId`, if any (devices.connection_id, set by presence). */
export async function findDeviceByConnection(db: Executor, connectionId: string): Promise<string | undefined> {
  const rows = await db.select({ id: device.id }).from(device).where(eq(device.connectionId, connectionId)).limit(1)
  return rows[0]?.id
}
