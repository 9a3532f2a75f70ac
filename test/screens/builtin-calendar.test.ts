// The calendar screen from feeds shaped like real exports: Google's (IANA TZIDs with their
// VTIMEZONE, EXDATE, moved and cancelled instances) and Outlook's (Windows zone names defined only
// by the feed's VTIMEZONE, folded lines, CRLF), across the 2026 DST changes (US 8 March, EU 29 March).
import t from 'tap'
import { builtinScreens } from '../../src/screens/builtin/index.js'
import { expandIcs } from '../../src/screens/builtin/ics.js'
import { renderBuiltin, visibleText } from '../helpers/screen-render.js'

const crlf = (lines: string) =>
  lines
    .trim()
    .split('\n')
    .map((l) => l.replace(/^ {4}/, ''))
    .join('\r\n')

const GOOGLE = crlf(`
BEGIN:VCALENDAR
PRODID:-//Google Inc//Google Calendar 70.9054//EN
VERSION:2.0
CALSCALE:GREGORIAN
METHOD:PUBLISH
X-WR-CALNAME:Family
X-WR-TIMEZONE:Europe/Berlin
BEGIN:VTIMEZONE
TZID:Europe/Berlin
X-LIC-LOCATION:Europe/Berlin
BEGIN:DAYLIGHT
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
TZNAME:CEST
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
TZNAME:CET
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
END:VTIMEZONE
BEGIN:VEVENT
DTSTART;TZID=Europe/Berlin:20260302T090000
DTEND;TZID=Europe/Berlin:20260302T093000
RRULE:FREQ=WEEKLY;WKST=MO;UNTIL=20260427T070000Z;BYDAY=MO
EXDATE;TZID=Europe/Berlin:20260323T090000
DTSTAMP:20260301T120000Z
UID:7kq3s0l1m2n3o4p5@google.com
CREATED:20260220T101500Z
LAST-MODIFIED:20260301T115900Z
SEQUENCE:1
STATUS:CONFIRMED
SUMMARY:Standup
TRANSP:OPAQUE
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=Europe/Berlin:20260331T100000
DTEND;TZID=Europe/Berlin:20260331T103000
DTSTAMP:20260301T120000Z
UID:7kq3s0l1m2n3o4p5@google.com
RECURRENCE-ID;TZID=Europe/Berlin:20260330T090000
SEQUENCE:2
STATUS:CONFIRMED
SUMMARY:Standup (moved to Tuesday)
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=Europe/Berlin:20260413T090000
DTEND;TZID=Europe/Berlin:20260413T093000
DTSTAMP:20260301T120000Z
UID:7kq3s0l1m2n3o4p5@google.com
RECURRENCE-ID;TZID=Europe/Berlin:20260413T090000
STATUS:CANCELLED
SUMMARY:Standup
END:VEVENT
BEGIN:VEVENT
DTSTART;VALUE=DATE:20260325
DTEND;VALUE=DATE:20260328
DTSTAMP:20260301T120000Z
UID:holiday-1@google.com
SUMMARY:Spring holiday
TRANSP:TRANSPARENT
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=Europe/Berlin:20260321T223000
DTEND;TZID=Europe/Berlin:20260322T061500
DTSTAMP:20260301T120000Z
UID:night-train@google.com
LOCATION:Berlin Hbf\\, Gleis 14
SUMMARY:Night train to Vienna
END:VEVENT
BEGIN:VEVENT
DTSTART:20260324T140000Z
DTEND:20260324T150000Z
DTSTAMP:20260301T120000Z
UID:utc-call@google.com
SUMMARY:Call with the New York office about the quarterly numbers and the pla
 ns for the spring
END:VEVENT
END:VCALENDAR
`)

const OUTLOOK = crlf(`
BEGIN:VCALENDAR
METHOD:PUBLISH
PRODID:Microsoft Exchange Server 2010
VERSION:2.0
X-WR-CALNAME:Calendar
BEGIN:VTIMEZONE
TZID:Eastern Standard Time
BEGIN:STANDARD
DTSTART:16010101T020000
TZOFFSETFROM:-0400
TZOFFSETTO:-0500
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=1SU;BYMONTH=11
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:16010101T020000
TZOFFSETFROM:-0500
TZOFFSETTO:-0400
RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=2SU;BYMONTH=3
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
DESCRIPTION:\\n
RRULE:FREQ=WEEKLY;COUNT=8;INTERVAL=1;BYDAY=TU;WKST=SU
UID:040000008200E00074C5B7101A82E00800000000A0B1C2D3E4F5
SUMMARY:Sync with Boston
DTSTART;TZID=Eastern Standard Time:20260303T090000
DTEND;TZID=Eastern Standard Time:20260303T100000
CLASS:PUBLIC
PRIORITY:5
DTSTAMP:20260301T100000Z
TRANSP:OPAQUE
STATUS:CONFIRMED
SEQUENCE:0
LOCATION:Microsoft Teams Meeting
X-MICROSOFT-CDO-APPT-SEQUENCE:0
X-MICROSOFT-CDO-BUSYSTATUS:BUSY
X-MICROSOFT-CDO-ALLDAYEVENT:FALSE
END:VEVENT
END:VCALENDAR
`)

const calendar = builtinScreens.calendar!
const device = { id: 'd1', name: 'Hall', width: 800, height: 480 }
const berlin = 'Europe/Berlin'
const iso = (ms: number) => new Date(ms).toISOString()

t.test(
  'a weekly event keeps its wall time across the DST change; the EXDATE is skipped, the moved instance moved, the cancelled one gone',
  async (t) => {
    const list = expandIcs(GOOGLE, { from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-05-01T00:00:00Z'), timeZone: berlin })
    const standups = list.filter((o) => o.uid === '7kq3s0l1m2n3o4p5@google.com').map((o) => [iso(o.startMs), o.title])
    t.same(standups, [
      ['2026-03-02T08:00:00.000Z', 'Standup'],
      ['2026-03-09T08:00:00.000Z', 'Standup'],
      ['2026-03-16T08:00:00.000Z', 'Standup'],
      // 23 March: EXDATE. 29 March: summer time begins, 09:00 in Berlin is 07:00 UTC from then on.
      ['2026-03-31T08:00:00.000Z', 'Standup (moved to Tuesday)'],
      ['2026-04-06T07:00:00.000Z', 'Standup'],
      // 13 April: cancelled instance.
      ['2026-04-20T07:00:00.000Z', 'Standup'],
      ['2026-04-27T07:00:00.000Z', 'Standup'],
    ])
  },
)

t.test('a zone known only by its VTIMEZONE (Outlook) follows its own DST rules', async (t) => {
  const list = expandIcs(OUTLOOK, { from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-05-01T00:00:00Z'), timeZone: berlin })
  // 09:00 in New York: 14:00 UTC before 8 March (EST), 13:00 UTC after (EDT).
  t.same(
    list.map((o) => iso(o.startMs)),
    [
      '2026-03-03T14:00:00.000Z',
      '2026-03-10T13:00:00.000Z',
      '2026-03-17T13:00:00.000Z',
      '2026-03-24T13:00:00.000Z',
      '2026-03-31T13:00:00.000Z',
      '2026-04-07T13:00:00.000Z',
      '2026-04-14T13:00:00.000Z',
      '2026-04-21T13:00:00.000Z',
    ],
  )
  t.equal(list[0]!.location, 'Microsoft Teams Meeting')
})

t.test('an IANA TZID without a VTIMEZONE block still gets its zone', async (t) => {
  const bare = crlf(`
    BEGIN:VCALENDAR
    VERSION:2.0
    BEGIN:VEVENT
    UID:bare
    DTSTART;TZID=America/Los_Angeles:20260310T080000
    DTEND;TZID=America/Los_Angeles:20260310T090000
    SUMMARY:Bare zone
    END:VEVENT
    END:VCALENDAR`)
  const [only] = expandIcs(bare, { from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-04-01T00:00:00Z'), timeZone: berlin })
  t.equal(iso(only!.startMs), '2026-03-10T15:00:00.000Z')
})

t.test('the month grid: today marked, days with events dotted, all-day and overnight events on each of their days', async (t) => {
  const now = new Date('2026-03-20T10:00:00Z')
  const { html, data } = renderBuiltin(calendar, { raw: GOOGLE, variables: {}, now, timeZone: berlin, device })
  t.equal(data.today, '2026-03-20')
  t.equal(data.monthLabel, 'March 2026')
  const weeks = data.weeks as { date: string; inMonth: boolean; isToday: boolean; dots: number; titles: string[] }[][]
  const days = new Map(weeks.flat().map((d) => [d.date, d]))
  // Weeks start on Monday: 23 Feb is the grid's first cell, 5 April its last.
  t.equal(weeks[0]![0]!.date, '2026-02-23')
  t.equal(weeks.at(-1)!.at(-1)!.date, '2026-04-05')
  t.equal(weeks.flat().filter((d) => d.isToday).length, 1)
  t.ok(days.get('2026-03-20')!.isToday)
  t.match(html, /cal-day cal-today"[^>]*>20</)
  t.same(days.get('2026-03-16')!.titles, ['Standup'])
  t.same(days.get('2026-03-23')!.titles, [], 'the EXDATE leaves the day empty')
  t.same(days.get('2026-03-30')!.titles, [], 'the moved instance left its day')
  t.same(days.get('2026-03-31')!.titles, ['Standup (moved to Tuesday)'])
  for (const day of ['2026-03-25', '2026-03-26', '2026-03-27']) t.same(days.get(day)!.titles, ['Spring holiday'], day)
  t.same(days.get('2026-03-28')!.titles, [], 'DTEND of an all-day event is exclusive')
  t.same(days.get('2026-03-21')!.titles, ['Night train to Vienna'])
  t.same(days.get('2026-03-22')!.titles, ['Night train to Vienna'], 'the overnight event is on its second day too')
  t.equal(days.get('2026-02-23')!.inMonth, false)
})

t.test('the next events, with their days and times in the screen zone', async (t) => {
  const now = new Date('2026-03-20T10:00:00Z')
  const { html, data } = renderBuiltin(calendar, {
    raw: GOOGLE,
    variables: { locale: 'en-GB', maxEvents: 5 },
    now,
    timeZone: berlin,
    device,
  })
  const upcoming = data.upcoming as { title: string; dayLabel: string; timeLabel: string; date: string }[]
  t.same(
    upcoming.map((e) => [e.date, e.title]),
    [
      ['2026-03-21', 'Night train to Vienna'],
      ['2026-03-24', 'Call with the New York office about the quarterly numbers and the plans for the spring'],
      ['2026-03-25', 'Spring holiday'],
      ['2026-03-31', 'Standup (moved to Tuesday)'],
      ['2026-04-06', 'Standup'],
    ],
  )
  t.equal(upcoming[0]!.dayLabel, 'Tomorrow')
  t.equal(upcoming[0]!.timeLabel, '22:30 – 06:15 (Sun 22 Mar)')
  t.equal(upcoming[1]!.timeLabel, '15:00 – 16:00', 'a UTC event in Berlin time (CET)')
  t.equal(upcoming[2]!.timeLabel, 'All day until 27 Mar')
  t.equal(upcoming[3]!.timeLabel, '10:00 – 10:30')
  t.equal(upcoming[4]!.timeLabel, '09:00 – 09:30', 'after the DST change, still 09:00')
  const text = visibleText(html)
  t.match(text, 'Tomorrow · 22:30 – 06:15 (Sun 22 Mar) Night train to Vienna Berlin Hbf, Gleis 14')
  t.match(text, 'Mon 6 Apr · 09:00 – 09:30 Standup')
})

t.test('a running event is listed as now; a 12-hour clock on request', async (t) => {
  const now = new Date('2026-03-16T08:10:00Z')
  const { data } = renderBuiltin(calendar, { raw: GOOGLE, variables: { hour12: true }, now, timeZone: berlin, device })
  const [first] = data.upcoming as { title: string; dayLabel: string; timeLabel: string }[]
  t.equal(first!.title, 'Standup')
  t.equal(first!.dayLabel, 'Now')
  t.match(first!.timeLabel, /9:00\s?AM – 9:30\s?AM/)
})

t.test('weeks can start on Sunday; the grid holds at 400×300 and 1872×1404', async (t) => {
  const now = new Date('2026-03-20T10:00:00Z')
  const small = renderBuiltin(calendar, {
    raw: GOOGLE,
    variables: { weekStart: 'sunday' },
    now,
    timeZone: berlin,
    device: { ...device, width: 400, height: 300 },
  })
  const weeks = small.data.weeks as { date: string }[][]
  t.equal(weeks[0]![0]!.date, '2026-03-01')
  t.equal((small.data.weekdays as string[])[0], 'Sun')
  t.ok((small.data.cellHeight as number) > 20)
  const large = renderBuiltin(calendar, {
    raw: OUTLOOK,
    variables: {},
    now,
    timeZone: berlin,
    device: { ...device, width: 1872, height: 1404 },
  })
  t.match(large.html, 'width: 1872px; height: 1404px')
  t.ok((large.data.cellHeight as number) * (large.data.weeks as unknown[]).length < 1404)
})

t.test('no feed yet: an empty month; not iCalendar: an error with a code', async (t) => {
  const now = new Date('2026-03-20T10:00:00Z')
  const { html } = renderBuiltin(calendar, { raw: undefined, variables: {}, now, timeZone: berlin, device })
  t.match(visibleText(html), 'No upcoming events')
  t.throws(() => calendar.prepare({ raw: '<html>not a calendar</html>', variables: {}, now, timeZone: berlin }), { code: 'ICS_INVALID' })
  t.throws(() => calendar.prepare({ raw: 'BEGIN:VCALENDAR\r\nthis is : broken\r\n', variables: {}, now, timeZone: berlin }), {
    code: 'ICS_INVALID',
  })
  t.throws(() => calendar.prepare({ raw: { not: 'text' }, variables: {}, now, timeZone: berlin }), { code: 'ICS_INVALID' })
})
