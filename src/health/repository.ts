import { and, eq, inArray, lt, sql } from 'drizzle-orm'
import type { Executor } from '../db/client.js'
import { device } from '../devices/tables.js'
import { deviceSchedule } from '../schedules/tables.js'
import { deviceHealth } from './tables.js'

export type HealthRow = typeof deviceHealth.$inferSelect

/** Records a status report; answers the row as it was before (undefined for a device's first). */
export async function recordReport(
  db: Executor,
  deviceId: string,
  at: Date,
  intervalSeconds: number | undefined,
): Promise<HealthRow | undefined> {
  const [before] = await db.select().from(deviceHealth).where(eq(deviceHealth.deviceId, deviceId)).limit(1)
  await db
    .insert(deviceHealth)
    .values({ deviceId, lastReportAt: at, intervalSeconds: intervalSeconds ?? null })
    .onConflictDoUpdate({
      target: deviceHealth.deviceId,
      set: { lastReportAt: at, ...(intervalSeconds !== undefined ? { intervalSeconds } : {}) },
    })
  return before
}

export async function setAlert(db: Executor, deviceId: string, alert: 'batteryLow' | 'silent', raised: boolean): Promise<void> {
  await db
    .update(deviceHealth)
    .set({ [alert]: raised })
    .where(eq(deviceHealth.deviceId, deviceId))
}

export type SilentDevice = { deviceId: string; name: string; userId: string; organizationId: string | null; lastReportAt: Date }

/**
 * Devices not heard from for three of their report intervals (`defaultSeconds` when they never
 * said), not yet alerted, and not asleep by their day plan: marked silent, and answered.
 */
export async function markSilent(db: Executor, now: Date, defaultSeconds: number): Promise<SilentDevice[]> {
  const at = now.toISOString()
  // Silence counts from the last report, or from the end of the last sleep window when later.
  const woke = sql`(select (s.current->>'wokeAt')::timestamptz from ${deviceSchedule} s where s.device_id = ${deviceHealth.deviceId})`
  const since = sql`greatest(${deviceHealth.lastReportAt}, coalesce(${woke}, ${deviceHealth.lastReportAt}))`
  const due = sql`${since} + make_interval(secs => 3 * coalesce(${deviceHealth.intervalSeconds}, ${defaultSeconds})) < ${at}::timestamptz`
  const asleep = sql`exists (select 1 from ${deviceSchedule} s where s.device_id = ${deviceHealth.deviceId} and s.current->>'state' = 'sleeping' and (s.current->>'sleepingUntil')::timestamptz > ${at}::timestamptz)`
  const rows = await db
    .update(deviceHealth)
    .set({ silent: true })
    .where(and(eq(deviceHealth.silent, false), lt(deviceHealth.lastReportAt, now), due, sql`not ${asleep}`))
    .returning({ deviceId: deviceHealth.deviceId, lastReportAt: deviceHealth.lastReportAt })
  if (!rows.length) return []
  const owners = await db
    .select({ id: device.id, name: device.name, userId: device.userId, organizationId: device.organizationId })
    .from(device)
    .where(
      inArray(
        device.id,
        rows.map((r) => r.deviceId),
      ),
    )
  const byId = new Map(owners.map((o) => [o.id, o]))
  return rows.flatMap((r) => {
    const o = byId.get(r.deviceId)
    return o
      ? [{ deviceId: r.deviceId, name: o.name, userId: o.userId, organizationId: o.organizationId, lastReportAt: r.lastReportAt }]
      : []
  })
}
