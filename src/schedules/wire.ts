// The schedule as the device's retained config carries it (devices/{id}/config `schedule`).
import type { ScheduleInfo } from '../mqtt/contract.js'
import type { ScheduleRow } from './repository.js'

export function scheduleInfo(row: Pick<ScheduleRow, 'timeZone' | 'sleep' | 'nextAt' | 'current'> | undefined): ScheduleInfo | null {
  if (!row) return null
  return {
    timeZone: row.timeZone,
    sleep: row.sleep,
    nextChangeAt: row.nextAt?.toISOString() ?? null,
    sleepingUntil: row.current?.state === 'sleeping' ? (row.current.sleepingUntil ?? null) : null,
  }
}
