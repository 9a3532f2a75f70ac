// The date and clock screen: what a frame shows when it has nothing else, and the screen that
// proves the time zone is right. A frame refreshes every few minutes at best, so minutes only.
import { sizesFor } from './layout.js'
import type { BuiltinScreen } from './types.js'
import { boolVar, localeVar, stringVar, zoneVar } from './variables.js'

const template = `<div class="clock" style="width: {{ data.size.width }}px; height: {{ data.size.height }}px; padding: {{ data.size.pad }}px">
  <div class="clock-weekday" style="font-size: {{ data.size.l }}px">{{ data.weekday }}</div>
  <div class="clock-time-row">
    <div class="clock-time" style="font-size: {{ data.size.xxl }}px">{{ data.time }}</div>
    {% if data.dayPeriod %}<div class="clock-period" style="font-size: {{ data.size.l }}px; margin-left: {{ data.size.pad }}px">{{ data.dayPeriod }}</div>{% endif %}
  </div>
  <div class="clock-date" style="font-size: {{ data.size.l }}px">{{ data.date }}</div>
  {% if data.showZone %}<div class="clock-zone" style="font-size: {{ data.size.s }}px; margin-top: {{ data.size.pad }}px">{{ data.zoneLabel }}</div>{% endif %}
</div>`

const css = `
.clock { display: flex; flex-direction: column; align-items: center; justify-content: center; background-color: #ffffff; color: #000000; font-family: Inter; }
.clock-weekday { display: flex; font-weight: 600; }
.clock-time-row { display: flex; flex-direction: row; align-items: flex-end; }
.clock-time { display: flex; font-weight: 700; letter-spacing: -2px; }
.clock-period { display: flex; font-weight: 600; padding-bottom: 8px; }
.clock-date { display: flex; }
.clock-zone { display: flex; color: #555555; }
`

type ClockParts = { time: string; dayPeriod: string; weekday: string; date: string; isoDate: string; hour12: boolean }

/** The wall-clock parts of `now` in `timeZone`, formatted for `locale`. */
function clockParts(now: Date, timeZone: string, locale: string, hour12Choice?: boolean): ClockParts {
  const hour12 = hour12Choice ?? new Intl.DateTimeFormat(locale, { hour: 'numeric', timeZone }).resolvedOptions().hour12 === true
  // hourCycle, not hour12: with hour12 false, en-US formats the hour after midnight as "24:30".
  const hourCycle = hour12 ? 'h12' : 'h23'
  const timeParts = new Intl.DateTimeFormat(locale, {
    hour: hour12 ? 'numeric' : '2-digit',
    minute: '2-digit',
    hourCycle,
    timeZone,
  }).formatToParts(now)
  // The day period (AM/PM) is drawn smaller beside the digits, so it is split out of the time.
  const dayPeriod = timeParts.find((p) => p.type === 'dayPeriod')?.value ?? ''
  const time = timeParts
    .filter((p) => p.type !== 'dayPeriod')
    .map((p) => p.value)
    .join('')
    .trim()
  const weekday = new Intl.DateTimeFormat(locale, { weekday: 'long', timeZone }).format(now)
  const date = new Intl.DateTimeFormat(locale, { day: 'numeric', month: 'long', year: 'numeric', timeZone }).format(now)
  const isoDate = new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit', timeZone }).format(now)
  return { time, dayPeriod, weekday, date, isoDate, hour12 }
}

function hour12Of(variables: Record<string, unknown>): boolean | undefined {
  const explicit = boolVar(variables, 'hour12')
  if (explicit !== undefined) return explicit
  const format = stringVar(variables, 'format', '')
  if (format === '12h' || format === '12') return true
  if (format === '24h' || format === '24') return false
  return undefined
}

export const clock: BuiltinScreen = {
  name: 'clock',
  description: 'The date and time in a chosen time zone and language.',
  template,
  css,
  source: 'none',
  prepare({ variables, now, timeZone, device }) {
    const zone = zoneVar(variables, timeZone)
    const locale = localeVar(variables)
    return {
      ...clockParts(now, zone, locale, hour12Of(variables)),
      timeZone: zone,
      zoneLabel: stringVar(variables, 'label', zone.replace(/_/g, ' ')),
      showZone: variables.showZone !== false,
      size: sizesFor(device),
    }
  },
}
