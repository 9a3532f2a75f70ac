// ICS feeds to the occurrences a calendar screen draws, with ical.js (node-ical needs Node 22).
// What real feeds need and naive parsers get wrong: recurring events (RRULE, RDATE, EXDATE),
// moved or cancelled instances (RECURRENCE-ID), time zones given by the feed's own VTIMEZONE
// blocks (Outlook names them "W. Europe Standard Time"), all-day events (dates, end exclusive)
// and events that cross midnight.
import ICAL from 'ical.js'
import { DateTime } from 'luxon'

export type Occurrence = {
  uid: string
  title: string
  location?: string
  allDay: boolean
  /** Instants in ms; for all-day events, midnight of the first and of the day after the last in the screen's zone. */
  startMs: number
  endMs: number
}

export type ExpandOptions = {
  from: Date
  to: Date
  /** The screen's zone: floating times and all-day dates are read in it. */
  timeZone: string
  /** Bounds the work one rule may cause (a daily rule since 1990 with no end). */
  maxIterationsPerEvent?: number
}

export class IcsError extends Error {
  readonly code = 'ICS_INVALID'
}

type IcalTime = InstanceType<typeof ICAL.Time>
type IcalComponent = InstanceType<typeof ICAL.Component>

/** The instant of an ical.js time: by its zone when the feed defined it, by an IANA TZID, else in the screen's zone. */
function toMs(time: IcalTime, fallbackZone: string): number {
  if (time.isDate) {
    return DateTime.fromObject({ year: time.year, month: time.month, day: time.day }, { zone: fallbackZone }).toMillis()
  }
  const tzid = time.zone?.tzid
  if (tzid && tzid !== 'floating') return time.toUnixTime() * 1000
  // A TZID without a VTIMEZONE block (ical.js leaves it floating): Google's and Apple's names are IANA's.
  const named = (time as IcalTime & { timezone?: string }).timezone
  const zone = named && DateTime.now().setZone(named).isValid ? named : fallbackZone
  const wall = { year: time.year, month: time.month, day: time.day, hour: time.hour, minute: time.minute, second: time.second }
  return DateTime.fromObject(wall, { zone }).toMillis()
}

function parseCalendar(text: string): IcalComponent {
  if (!/BEGIN:VCALENDAR/i.test(text)) throw new IcsError('The feed is not an iCalendar file (no BEGIN:VCALENDAR)')
  try {
    const parsed = ICAL.parse(text)
    // Several calendars in one body: the first is the feed, as every client reads it.
    const jcal = Array.isArray(parsed[0]) ? parsed[0] : parsed
    return new ICAL.Component(jcal)
  } catch (err) {
    throw new IcsError(`The feed is not valid iCalendar: ${(err as Error).message}`)
  }
}

/**
 * ical.js resolves TZIDs through one process-wide registry; the feed's zones are registered only
 * for the duration of one synchronous expansion and removed after, so feeds never see each
 * other's definitions, and the zones ical.js knows itself (UTC) are never replaced.
 */
function withFeedZones<T>(calendar: IcalComponent, run: () => T): T {
  const added: string[] = []
  for (const vtimezone of calendar.getAllSubcomponents('vtimezone')) {
    const tzid = vtimezone.getFirstPropertyValue('tzid')
    if (typeof tzid !== 'string' || ICAL.TimezoneService.has(tzid)) continue
    ICAL.TimezoneService.register(new ICAL.Timezone(vtimezone), tzid)
    added.push(tzid)
  }
  try {
    return run()
  } finally {
    for (const tzid of added) ICAL.TimezoneService.remove(tzid)
  }
}

function isCancelled(component: IcalComponent): boolean {
  const status = component.getFirstPropertyValue('status')
  return typeof status === 'string' && status.toUpperCase() === 'CANCELLED'
}

function occurrenceOf(event: InstanceType<typeof ICAL.Event>, start: IcalTime, end: IcalTime, zone: string): Occurrence {
  const startMs = toMs(start, zone)
  let endMs = toMs(end, zone)
  // DTEND missing or before DTSTART: a point in time, or one whole day for a date.
  if (!(endMs > startMs)) endMs = start.isDate ? DateTime.fromMillis(startMs, { zone }).plus({ days: 1 }).toMillis() : startMs
  const location = event.location
  return {
    uid: event.uid,
    title: event.summary || '(no title)',
    ...(location ? { location } : {}),
    allDay: start.isDate,
    startMs,
    endMs,
  }
}

/** Every occurrence overlapping [from, to), sorted by start then title. Throws IcsError for a body that is not iCalendar. */
export function expandIcs(text: string, options: ExpandOptions): Occurrence[] {
  const calendar = parseCalendar(text)
  const fromMs = options.from.getTime()
  const toMsLimit = options.to.getTime()
  const maxIterations = options.maxIterationsPerEvent ?? 20_000
  const zone = options.timeZone
  const overlaps = (o: Occurrence) => o.startMs < toMsLimit && (o.endMs > fromMs || (o.endMs === o.startMs && o.startMs >= fromMs))

  return withFeedZones(calendar, () => {
    const masters = new Map<string, IcalComponent>()
    const exceptions = new Map<string, IcalComponent[]>()
    const orphans: IcalComponent[] = []
    for (const vevent of calendar.getAllSubcomponents('vevent')) {
      const uid = String(vevent.getFirstPropertyValue('uid') ?? '')
      if (vevent.hasProperty('recurrence-id')) {
        const list = exceptions.get(uid) ?? []
        list.push(vevent)
        exceptions.set(uid, list)
      } else if (uid === '' || masters.has(uid)) {
        orphans.push(vevent) // no UID, or a duplicate one: each stands alone
      } else {
        masters.set(uid, vevent)
      }
    }
    // An instance exported without its series (a shared single occurrence) is an event of its own.
    for (const [uid, list] of exceptions) if (!masters.has(uid)) orphans.push(...list)

    const found: Occurrence[] = []
    for (const [uid, component] of masters) {
      const event = new ICAL.Event(component)
      for (const exception of exceptions.get(uid) ?? []) event.relateException(new ICAL.Event(exception))
      if (!event.isRecurring()) {
        if (isCancelled(component)) continue
        const occurrence = occurrenceOf(event, event.startDate, event.endDate, zone)
        if (overlaps(occurrence)) found.push(occurrence)
        continue
      }
      // A moved instance may land up to its own length plus some days from its slot: a week of slack.
      const stopAfter = toMsLimit + 7 * 86_400_000
      const iterator = event.iterator()
      for (let i = 0; i < maxIterations; i++) {
        const next = iterator.next()
        if (!next) break
        if (toMs(next, zone) > stopAfter) break
        const details = event.getOccurrenceDetails(next)
        if (isCancelled(details.item.component)) continue
        const occurrence = occurrenceOf(details.item, details.startDate, details.endDate, zone)
        if (overlaps(occurrence)) found.push(occurrence)
      }
    }
    for (const component of orphans) {
      if (isCancelled(component)) continue
      const event = new ICAL.Event(component)
      const occurrence = occurrenceOf(event, event.startDate, event.endDate, zone)
      if (overlaps(occurrence)) found.push(occurrence)
    }
    return found.sort((a, b) => a.startMs - b.startMs || a.title.localeCompare(b.title))
  })
}
