// What a device's day plan says at a given instant: asleep or not, which rule's playlist plays,
// which turn of it, and when that next changes. Local times become instants through Luxon in the
// plan's IANA time zone, so DST days come out right: a time the clock skips (02:30 on the
// spring-forward day in Europe/Berlin) is taken as the same time after the gap (03:30), once; a
// time that happens twice (the fall-back day) as one of its occurrences (Luxon takes the
// standard-time one), once.
import { createHash } from 'node:crypto'
import { DateTime, IANAZone } from 'luxon'
import type { ScheduleRule, SleepWindow, Weekday } from './tables.js'

export const WEEKDAYS: readonly Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']

export type SchedulePlan = { timeZone: string; rules: ScheduleRule[]; sleep: SleepWindow[] }

/** A field that is wrong, and why: the route answers 400 with both. */
export class PlanError extends Error {
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super(`${field}: ${reason}`)
  }
}

const DAY = 1440
const WEEK = 7 * DAY

/** "HH:MM" as minutes after midnight; "24:00" only as an end. */
function minutesOf(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number) as [number, number]
  return h * 60 + m
}

/** How long a window from `from` to `to` lasts, in minutes; one whose end is not after its start ends the next day. */
function lengthOf(from: string, to: string): number {
  const a = minutesOf(from)
  const b = minutesOf(to)
  return b > a ? b - a : DAY - a + b
}

/**
 * Checks what the schema cannot: a known time zone, windows of some length, and rules that never
 * overlap (which playlist plays must never be a matter of order). Throws PlanError naming the field.
 */
export function checkPlan(plan: SchedulePlan): void {
  if (!IANAZone.isValidZone(plan.timeZone)) throw new PlanError('timeZone', `"${plan.timeZone}" is not an IANA time zone`)
  const windows: Array<{ rule: number; day: Weekday; start: number; end: number }> = []
  plan.rules.forEach((r, i) => {
    if (r.from === '24:00') throw new PlanError(`rules[${i}].from`, 'a window starts at 23:59 at the latest')
    if (r.to !== '24:00' && minutesOf(r.from) === minutesOf(r.to))
      throw new PlanError(`rules[${i}].to`, 'equals from (a window must last some time)')
    if (new Set(r.days).size !== r.days.length) throw new PlanError(`rules[${i}].days`, 'names a day twice')
    for (const day of r.days) {
      const start = WEEKDAYS.indexOf(day) * DAY + minutesOf(r.from)
      windows.push({ rule: i, day, start, end: start + lengthOf(r.from, r.to) })
    }
  })
  // Minutes of the week; a window running past Sunday midnight wraps to Monday.
  for (let i = 0; i < windows.length; i++) {
    for (let j = i + 1; j < windows.length; j++) {
      const a = windows[i]!
      const b = windows[j]!
      if (a.rule === b.rule) continue
      const overlaps = [0, WEEK, -WEEK].some((shift) => a.start < b.end + shift && b.start + shift < a.end)
      if (overlaps)
        throw new PlanError(`rules[${b.rule}]`, `overlaps rules[${a.rule}] on ${a.day === b.day ? a.day : `${a.day} and ${b.day}`}`)
    }
  }
  plan.sleep.forEach((s, i) => {
    if (s.from === '24:00') throw new PlanError(`sleep[${i}].from`, 'a window starts at 23:59 at the latest')
    if (s.to !== '24:00' && minutesOf(s.from) === minutesOf(s.to))
      throw new PlanError(`sleep[${i}].to`, 'equals from (a window must last some time)')
  })
}

type Window = { start: number; end: number }

/**
 * Conversions already made: a fleet's plans name few zones, days and times, and the scheduler
 * asks about the same ones for every device (the answers never change; the map is bounded).
 */
const instants = new Map<string, number>()
const localDays = new Map<string, DateTime[]>()
const remember = <T>(cache: Map<string, T>, key: string, make: () => T): T => {
  let v = cache.get(key)
  if (v === undefined) {
    if (cache.size >= 50_000) cache.clear()
    v = make()
    cache.set(key, v)
  }
  return v
}

/** The instant a local date's "HH:MM" is in the zone (24:00 is the next day's midnight). */
function instantOf(day: DateTime, hhmm: string): number {
  return remember(instants, `${day.zoneName}|${day.toISODate()}|${hhmm}`, () => {
    const m = minutesOf(hhmm)
    const date = m === DAY ? day.plus({ days: 1 }) : day
    return DateTime.fromObject(
      { year: date.year, month: date.month, day: date.day, hour: Math.floor((m % DAY) / 60), minute: m % 60 },
      { zone: day.zone },
    ).toMillis()
  })
}

/** The instants of a window starting on `day` (local), ending the same day or, when it crosses midnight, the next. */
function windowOn(day: DateTime, from: string, to: string): Window {
  const crosses = minutesOf(to) <= minutesOf(from)
  return { start: instantOf(day, from), end: instantOf(crosses ? day.plus({ days: 1 }) : day, to) }
}

/** Local days from yesterday (a window that began then may still run) to a week ahead (the next start of any rule). */
function daysAround(at: number, zone: string): DateTime[] {
  // Every zone's offset is a whole number of quarter hours: within one UTC quarter hour the local date is one.
  return remember(localDays, `${zone}|${Math.floor(at / 900_000)}`, () => {
    const today = DateTime.fromMillis(at, { zone }).startOf('day')
    return Array.from({ length: 9 }, (_, i) => today.plus({ days: i - 1 }))
  })
}

export type Turn =
  | { state: 'sleeping'; key: string; until: Date; nextChangeAt: Date }
  | { state: 'idle'; key: string; nextChangeAt: Date | null }
  | {
      state: 'playing'
      key: string
      rule: number
      playlistId: string
      /** Which turn of the playlist since the rule's window began (0, 1, …). */
      slot: number
      windowStart: Date
      nextChangeAt: Date
    }

/**
 * The plan at `at`. `itemSecondsOf` gives a rule's playlist's time per item (undefined when the
 * playlist is gone or empty: the rule then shows nothing new). Sleep wins over every rule.
 */
export function turnAt(plan: SchedulePlan, at: Date, itemSecondsOf: (playlistId: string) => number | undefined): Turn {
  const t = at.getTime()
  const days = daysAround(t, plan.timeZone)
  const boundaries: number[] = []
  let asleep: Window | undefined
  for (const day of days) {
    for (const s of plan.sleep) {
      const w = windowOn(day, s.from, s.to)
      if (w.start <= t && t < w.end && (!asleep || w.end > asleep.end)) asleep = w
      boundaries.push(w.start, w.end)
    }
  }
  let active: { rule: number; window: Window } | undefined
  days.forEach((day) => {
    const weekday = WEEKDAYS[day.weekday - 1]!
    plan.rules.forEach((r, rule) => {
      if (!r.days.includes(weekday)) return
      const w = windowOn(day, r.from, r.to)
      if (w.start <= t && t < w.end) active = { rule, window: w }
      boundaries.push(w.start, w.end)
    })
  })
  const next = (extra?: number) => {
    const later = boundaries.filter((b) => b > t)
    if (extra !== undefined) later.push(extra)
    return later.length ? new Date(Math.min(...later)) : null
  }
  if (asleep) {
    // Sleep windows that touch or overlap are one sleep: wake at the end of the last.
    let until = asleep.end
    for (let grown = true; grown; ) {
      grown = false
      for (const day of days)
        for (const s of plan.sleep) {
          const w = windowOn(day, s.from, s.to)
          if (w.start <= until && w.end > until) {
            until = w.end
            grown = true
          }
        }
    }
    return {
      state: 'sleeping',
      key: `sleep@${new Date(asleep.start).toISOString()}`,
      until: new Date(until),
      nextChangeAt: new Date(until),
    }
  }
  const rule = active ? plan.rules[active.rule] : undefined
  const seconds = rule ? itemSecondsOf(rule.playlistId) : undefined
  if (!active || !rule || !seconds) {
    const from = active ? new Date(active.window.start).toISOString() : 'none'
    return { state: 'idle', key: `idle@${from}`, nextChangeAt: next() }
  }
  const slot = Math.floor((t - active.window.start) / (seconds * 1000))
  const nextItem = active.window.start + (slot + 1) * seconds * 1000
  return {
    state: 'playing',
    key: `rule${active.rule}@${new Date(active.window.start).toISOString()}#${slot}`,
    rule: active.rule,
    playlistId: rule.playlistId,
    slot,
    windowStart: new Date(active.window.start),
    nextChangeAt: next(nextItem)!,
  }
}

/**
 * Which of `count` items a turn shows. Sequential: in order, round and round. Shuffle: each round
 * through the list is its own order, drawn from a seed made of the device, the window and the
 * round, so every instance (and a restarted one) draws the same.
 */
export function itemIndex(mode: 'sequential' | 'shuffle', count: number, slot: number, seed: string): number {
  if (count <= 0) return -1
  const round = Math.floor(slot / count)
  const at = slot % count
  if (mode === 'sequential') return at
  const order = Array.from({ length: count }, (_, i) => i)
  const digest = createHash('sha256').update(`${seed}#${round}`).digest()
  let state = digest.readUInt32LE(0) || 1
  // xorshift32, seeded per round: a Fisher–Yates shuffle that needs no randomness to repeat.
  const random = () => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) / 2 ** 32
  }
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[order[i], order[j]] = [order[j]!, order[i]!]
  }
  return order[at]!
}
