// Device health alerts, from what devices report: battery low (under 15 %, and again only after it
// was above 25 %), and a device silent for longer than three of its report intervals (not while its
// day plan has it asleep). Each alert is an Event (`device.alert`) and a push notification to the
// owner, under its own preference switch.
import type { Database } from '../db/client.js'
import { findDevice } from '../devices/repository.js'
import { insertEvent } from '../events/repository.js'
import { markSilent, recordReport, setAlert } from './repository.js'

const BATTERY_LOW_PERCENT = 15
const BATTERY_REARM_PERCENT = 25

type Notify = (
  userId: string,
  kind: 'battery-low' | 'device-silent',
  message: { title: string; body: string; url?: string },
) => Promise<unknown>

export function createHealthService(deps: {
  db: Database
  clock: () => Date
  /** Seconds between reports assumed for a device that never said (`interval` in up/status). */
  defaultIntervalSeconds: number
  notify?: Notify
}) {
  const { db } = deps

  async function onStatus(deviceId: string, report: { battery?: number; interval?: number }): Promise<void> {
    const before = await recordReport(db, deviceId, deps.clock(), report.interval)
    if (before?.silent) await setAlert(db, deviceId, 'silent', false)
    const battery = report.battery
    if (battery === undefined) return
    if (battery < BATTERY_LOW_PERCENT && !before?.batteryLow) {
      await setAlert(db, deviceId, 'batteryLow', true)
      const dev = await findDevice(db, deviceId)
      if (!dev) return
      await insertEvent(db, {
        type: 'device.alert',
        deviceId,
        userId: dev.userId,
        organizationId: dev.organizationId,
        data: { kind: 'battery-low', battery },
      })
      // Not awaited: a status report is acknowledged once stored (src/mqtt/uplink.ts), and a slow
      // push service must not hold that acknowledgement (the notifier reports its own failures).
      void Promise.resolve(
        deps.notify?.(dev.userId, 'battery-low', {
          title: `${dev.name}: battery low`,
          body: `The battery is at ${Math.round(battery)} %.`,
          url: `/devices/${dev.id}`,
        }),
      ).catch(() => {})
    } else if (battery > BATTERY_REARM_PERCENT && before?.batteryLow) {
      await setAlert(db, deviceId, 'batteryLow', false)
    }
  }

  /** Raises the silent alert for every device that has gone quiet since the last sweep. */
  async function sweep(): Promise<number> {
    const silent = await markSilent(db, deps.clock(), deps.defaultIntervalSeconds)
    for (const d of silent) {
      await insertEvent(db, {
        type: 'device.alert',
        deviceId: d.deviceId,
        userId: d.userId,
        organizationId: d.organizationId,
        data: { kind: 'silent', lastReportAt: d.lastReportAt.toISOString() },
      })
      await deps.notify?.(d.userId, 'device-silent', {
        title: `${d.name} has gone silent`,
        body: `Nothing from it since ${d.lastReportAt.toISOString()}.`,
        url: `/devices/${d.deviceId}`,
      })
    }
    return silent.length
  }

  return { onStatus, sweep }
}
