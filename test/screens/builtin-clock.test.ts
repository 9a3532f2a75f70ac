// The clock screen: the wall time and date in the chosen zone and locale, 12 or 24 hours.
import t from 'tap'
import { builtinScreens } from '../../src/screens/builtin/index.js'
import { renderBuiltin, visibleText } from '../helpers/screen-render.js'

const clock = builtinScreens.clock!
const device = { id: 'd1', name: 'Kitchen', width: 800, height: 480 }
// 23:30 UTC on 28 Nov 2026 is already 29 Nov in Tokyo and still 28 Nov in New York.
const now = new Date('2026-11-28T23:30:00Z')

t.test('the time and date are those of the chosen zone', async (t) => {
  const tokyo = renderBuiltin(clock, {
    raw: undefined,
    variables: { timeZone: 'Asia/Tokyo', locale: 'en-GB' },
    now,
    timeZone: 'UTC',
    device,
  })
  const text = visibleText(tokyo.html)
  t.match(text, '08:30')
  t.match(text, 'Sunday')
  t.match(text, '29 November 2026')
  t.equal(tokyo.data.isoDate, '2026-11-29')

  const newYork = renderBuiltin(clock, {
    raw: undefined,
    variables: { timeZone: 'America/New_York', hour12: true },
    now,
    timeZone: 'UTC',
    device,
  })
  const nyText = visibleText(newYork.html)
  t.match(nyText, '6:30')
  t.match(nyText, 'PM')
  t.match(nyText, 'Saturday')
  t.match(nyText, 'November 28, 2026')
})

t.test('24 hours on request, the screen zone when the variable is missing or bad', async (t) => {
  const { html, data } = renderBuiltin(clock, {
    raw: undefined,
    variables: { format: '24h', timeZone: 'Mars/Olympus' },
    now,
    timeZone: 'Europe/Berlin',
  })
  t.equal(data.timeZone, 'Europe/Berlin')
  t.match(visibleText(html), '00:30')
  t.notMatch(visibleText(html), /AM|PM/)
  t.match(visibleText(html), 'Sunday')
})

t.test('the locale words the date', async (t) => {
  const { html } = renderBuiltin(clock, { raw: undefined, variables: { locale: 'de-DE' }, now, timeZone: 'Europe/Berlin', device })
  t.match(visibleText(html), 'Sonntag')
  t.match(visibleText(html), '29. November 2026')
})

t.test('the layout is sized from the frame, from 400×300 to 1872×1404', async (t) => {
  const small = renderBuiltin(clock, {
    raw: undefined,
    variables: {},
    now,
    timeZone: 'UTC',
    device: { ...device, width: 400, height: 300 },
  })
  const large = renderBuiltin(clock, {
    raw: undefined,
    variables: {},
    now,
    timeZone: 'UTC',
    device: { ...device, width: 1872, height: 1404 },
  })
  t.match(small.html, 'width: 400px; height: 300px')
  t.match(large.html, 'width: 1872px; height: 1404px')
  const fontOf = (html: string) => Number(/clock-time" style="font-size: (\d+)px/.exec(html)![1])
  t.ok(fontOf(large.html) > 2 * fontOf(small.html), 'the digits grow with the panel')
})
