// The month calendar screen: the month's grid with today marked and the days that have events,
// beside the next events. The feed is the screen's ICS source (raw is its body).
import { DateTime } from 'luxon'
import { expandIcs, IcsError, type Occurrence } from './ics.js'
import { sizesFor } from './layout.js'
import type { BuiltinScreen } from './types.js'
import { localeVar, numberVar, stringVar, zoneVar } from './variables.js'

const template = `<div class="cal" style="width: {{ data.size.width }}px; height: {{ data.size.height }}px; padding: {{ data.size.pad }}px">
  <div class="cal-month" style="width: {{ data.gridWidth }}px">
    <div class="cal-title" style="font-size: {{ data.size.m }}px; height: {{ data.titleHeight }}px">{{ data.monthLabel }}</div>
    <div class="cal-row">
      {% for name in data.weekdays %}<div class="cal-weekday" style="font-size: {{ data.size.xs }}px; height: {{ data.weekdayHeight }}px">{{ name }}</div>{% endfor %}
    </div>
    {% for week in data.weeks %}<div class="cal-row" style="height: {{ data.cellHeight }}px">
      {% for day in week %}<div class="cal-cell">
        <div class="{% if day.isToday %}cal-day cal-today{% elsif day.inMonth %}cal-day{% else %}cal-day cal-other{% endif %}" style="font-size: {{ data.size.s }}px; width: {{ data.dayBox }}px; height: {{ data.dayBox }}px">{{ day.day }}</div>
        <div class="cal-dots">{% for n in (1..day.dots) %}<div class="cal-dot" style="width: {{ data.dot }}px; height: {{ data.dot }}px"></div>{% endfor %}</div>
      </div>{% endfor %}
    </div>{% endfor %}
  </div>
  <div class="cal-agenda" style="margin-left: {{ data.size.pad }}px; padding-left: {{ data.size.pad }}px">
    <div class="cal-title" style="font-size: {{ data.size.m }}px; height: {{ data.titleHeight }}px">{{ data.agendaTitle }}</div>
    {% for e in data.upcoming %}<div class="cal-event" style="margin-bottom: {{ data.size.pad }}px">
      <div class="cal-event-when" style="font-size: {{ data.size.xs }}px">{{ e.dayLabel }} · {{ e.timeLabel }}</div>
      <div class="cal-event-title" style="font-size: {{ data.size.s }}px">{{ e.title }}</div>
      {% if e.location %}<div class="cal-event-where" style="font-size: {{ data.size.xs }}px">{{ e.location }}</div>{% endif %}
    </div>{% else %}<div class="cal-empty" style="font-size: {{ data.size.s }}px">{{ data.emptyText }}</div>{% endfor %}
  </div>
</div>`

const css = `
.cal { display: flex; flex-direction: row; background-color: #ffffff; color: #000000; font-family: Inter; }
.cal-month { display: flex; flex-direction: column; }
.cal-title { display: flex; align-items: center; font-weight: 700; }
.cal-row { display: flex; flex-direction: row; }
.cal-weekday { display: flex; flex: 1; justify-content: center; align-items: center; color: #555555; font-weight: 600; }
.cal-cell { display: flex; flex: 1; flex-direction: column; align-items: center; justify-content: flex-start; }
.cal-day { display: flex; align-items: center; justify-content: center; border-radius: 9999px; }
.cal-today { background-color: #000000; color: #ffffff; font-weight: 700; }
.cal-other { color: #aaaaaa; }
.cal-dots { display: flex; flex-direction: row; margin-top: 2px; }
.cal-dot { display: flex; background-color: #000000; border-radius: 9999px; margin-left: 1px; margin-right: 1px; }
.cal-agenda { display: flex; flex: 1; flex-direction: column; border-left: 2px solid #000000; overflow: hidden; }
.cal-event { display: flex; flex-direction: column; }
.cal-event-when { display: flex; color: #555555; font-weight: 600; }
.cal-event-title { display: flex; font-weight: 700; }
.cal-event-where { display: flex; color: #555555; }
.cal-empty { display: flex; color: #555555; }
`

type DayCell = { day: number; date: string; inMonth: boolean; isToday: boolean; dots: number; titles: string[] }
type Upcoming = {
  title: string
  location?: string
  allDay: boolean
  start: string
  end: string
  date: string
  dayLabel: string
  timeLabel: string
}

/** How far ahead the agenda looks for its next events. */
const AGENDA_DAYS = 60

function weekStartOf(variables: Record<string, unknown>): 1 | 7 {
  return stringVar(variables, 'weekStart', 'monday').toLowerCase().startsWith('sun') ? 7 : 1
}

function overlapsDay(o: Occurrence, dayStart: number, dayEnd: number): boolean {
  if (o.endMs === o.startMs) return o.startMs >= dayStart && o.startMs < dayEnd
  return o.startMs < dayEnd && o.endMs > dayStart
}

function upcomingOf(o: Occurrence, today: DateTime, locale: string, hour12: boolean | undefined): Upcoming {
  const zone = today.zoneName ?? 'UTC'
  const start = DateTime.fromMillis(o.startMs, { zone }).setLocale(locale)
  const end = DateTime.fromMillis(o.endMs, { zone }).setLocale(locale)
  const startDay = start.startOf('day')
  const days = Math.round(startDay.diff(today.startOf('day'), 'days').days)
  const dayLabel =
    days <= 0 && o.startMs <= today.toMillis()
      ? 'Now'
      : days === 0
        ? 'Today'
        : days === 1
          ? 'Tomorrow'
          : start.toLocaleString({ weekday: 'short', day: 'numeric', month: 'short' })
  // hourCycle, not hour12: with hour12 false, en-US writes the hour after midnight as "24:30".
  // A 24-hour clock pads its hour (06:15), as the clock screen does.
  const uses12 = hour12 ?? new Intl.DateTimeFormat(locale, { hour: 'numeric' }).resolvedOptions().hour12 === true
  const time = (t: DateTime) =>
    t.toLocaleString({ hour: uses12 ? 'numeric' : '2-digit', minute: '2-digit', hourCycle: uses12 ? 'h12' : 'h23' })
  let timeLabel: string
  if (o.allDay) {
    const lastDay = end.minus({ days: 1 })
    timeLabel = lastDay.hasSame(start, 'day') ? 'All day' : `All day until ${lastDay.toLocaleString({ day: 'numeric', month: 'short' })}`
  } else if (o.endMs === o.startMs) {
    timeLabel = time(start)
  } else {
    // Across midnight the end's day is said too: "22:00 – 01:00 (Tue 17 Mar)".
    const endDay = end.hasSame(start, 'day') ? '' : ` (${end.toLocaleString({ weekday: 'short', day: 'numeric', month: 'short' })})`
    timeLabel = `${time(start)} – ${time(end)}${endDay}`
  }
  return {
    title: o.title,
    ...(o.location ? { location: o.location } : {}),
    allDay: o.allDay,
    start: o.allDay ? start.toISODate()! : start.toISO()!,
    end: o.allDay ? end.toISODate()! : end.toISO()!,
    date: start.toISODate()!,
    dayLabel,
    timeLabel,
  }
}

export const calendar: BuiltinScreen = {
  name: 'calendar',
  description:
    'A month calendar from an ICS feed (Google, Outlook, iCloud): today marked, days with events dotted, the next events listed.',
  template,
  css,
  source: 'ics',
  prepare({ raw, variables, now, timeZone, device }) {
    const zone = zoneVar(variables, timeZone)
    const locale = localeVar(variables)
    const maxEvents = numberVar(variables, 'maxEvents', 6, 0, 30)
    const hour12Value = variables.hour12
    const hour12 = typeof hour12Value === 'boolean' ? hour12Value : undefined
    const weekStart = weekStartOf(variables)

    const today = DateTime.fromJSDate(now, { zone }).setLocale(locale)
    const monthStart = today.startOf('month')
    const lead = (monthStart.weekday - weekStart + 7) % 7
    const gridStart = monthStart.minus({ days: lead })
    const weekCount = Math.ceil((lead + monthStart.daysInMonth!) / 7)
    const gridEnd = gridStart.plus({ days: weekCount * 7 })
    const agendaEnd = today.startOf('day').plus({ days: AGENDA_DAYS })
    const windowEnd = DateTime.max(agendaEnd, gridEnd)

    if (raw !== undefined && raw !== null && typeof raw !== 'string') throw new IcsError('The calendar source must be an ICS text body')
    const text = typeof raw === 'string' ? raw : ''
    const occurrences = text.trim() === '' ? [] : expandIcs(text, { from: gridStart.toJSDate(), to: windowEnd.toJSDate(), timeZone: zone })

    const weeks: DayCell[][] = []
    for (let w = 0; w < weekCount; w++) {
      const week: DayCell[] = []
      for (let d = 0; d < 7; d++) {
        const day = gridStart.plus({ days: w * 7 + d })
        const dayStart = day.toMillis()
        const dayEnd = day.plus({ days: 1 }).toMillis()
        const onDay = occurrences.filter((o) => overlapsDay(o, dayStart, dayEnd))
        week.push({
          day: day.day,
          date: day.toISODate()!,
          inMonth: day.month === monthStart.month,
          isToday: day.hasSame(today, 'day'),
          dots: Math.min(3, onDay.length),
          titles: onDay.map((o) => o.title),
        })
      }
      weeks.push(week)
    }
    const weekdays = Array.from({ length: 7 }, (_, i) => gridStart.plus({ days: i }).toLocaleString({ weekday: 'short' }))
    const size = sizesFor(device)
    const titleHeight = Math.round(size.m * 1.6)
    // As many events as the column holds (a when line, two title lines, a gap): a small panel
    // shows fewer rather than cutting the last one in half.
    const eventHeight = Math.round(size.xs * 1.25 + size.s * 1.25 * 2 + size.pad)
    const fit = Math.max(1, Math.floor((size.height - 2 * size.pad - titleHeight) / eventHeight))
    const nowMs = now.getTime()
    const upcoming = occurrences
      .filter((o) => o.endMs > nowMs || (o.endMs === o.startMs && o.startMs >= nowMs))
      .filter((o) => o.startMs < agendaEnd.toMillis())
      .slice(0, Math.min(maxEvents, fit))
      .map((o) => upcomingOf(o, today, locale, hour12))

    const gridWidth = Math.round((size.width - 2 * size.pad) * 0.58)
    const weekdayHeight = Math.round(size.xs * 1.8)
    const cellHeight = Math.floor((size.height - 2 * size.pad - titleHeight - weekdayHeight) / weekCount)
    const dot = Math.max(3, Math.round(size.unit * 6))
    const dayBox = Math.max(12, Math.min(Math.floor(gridWidth / 7) - 2, cellHeight - dot - 4))
    return {
      timeZone: zone,
      today: today.toISODate(),
      monthLabel: stringVar(variables, 'title', monthStart.toLocaleString({ month: 'long', year: 'numeric' })),
      agendaTitle: stringVar(variables, 'agendaTitle', 'Next'),
      emptyText: stringVar(variables, 'emptyText', 'No upcoming events'),
      weekdays,
      weeks,
      upcoming,
      size,
      gridWidth,
      titleHeight,
      weekdayHeight,
      cellHeight,
      dayBox,
      dot,
    }
  },
}
