// The weather screen from a JSON source in the shape of Open-Meteo's forecast API
// (https://api.open-meteo.com/v1/forecast?latitude=..&longitude=..&current=temperature_2m,weather_code
// &daily=weather_code,temperature_2m_max,temperature_2m_min&timezone=auto): no key, free, and the
// shape several other services copy. Units are read from the answer's *_units, never assumed.
import { DateTime } from 'luxon'
import { sizesFor } from './layout.js'
import type { BuiltinScreen } from './types.js'
import { localeVar, numberVar, stringVar, zoneVar } from './variables.js'
import { describeWeatherCode, iconShapes } from './wmo.js'

const template = `<div class="wx" style="width: {{ data.size.width }}px; height: {{ data.size.height }}px; padding: {{ data.size.pad }}px">
  <div class="wx-now">
    <div class="wx-icon" style="width: {{ data.current.iconSize }}px; height: {{ data.current.iconSize }}px">{% for s in data.current.shapes %}<div class="wx-shape" style="left: {{ s.left }}px; top: {{ s.top }}px; width: {{ s.width }}px; height: {{ s.height }}px; border-radius: {{ s.radius }}px; background-color: {{ s.fill }}; border: {{ s.border }}px solid #000000"></div>{% endfor %}</div>
    <div class="wx-now-text" style="margin-left: {{ data.size.pad }}px">
      {% if data.label %}<div class="wx-label" style="font-size: {{ data.size.m }}px">{{ data.label }}</div>{% endif %}
      <div class="wx-temp" style="font-size: {{ data.size.xxl }}px">{{ data.current.temperature }}{{ data.units.temperature }}</div>
      <div class="wx-cond" style="font-size: {{ data.size.m }}px">{{ data.current.text }}</div>
      <div class="wx-detail" style="font-size: {{ data.size.s }}px">{% if data.current.apparent %}Feels like {{ data.current.apparent }}{{ data.units.temperature }}{% endif %}{% if data.current.humidity %} · Humidity {{ data.current.humidity }}%{% endif %}{% if data.current.wind %} · Wind {{ data.current.wind }} {{ data.units.wind }}{% endif %}</div>
    </div>
  </div>
  <div class="wx-days" style="margin-top: {{ data.size.pad }}px; padding-top: {{ data.size.pad }}px">
    {% for d in data.days %}<div class="wx-day">
      <div class="wx-day-name" style="font-size: {{ data.size.s }}px">{{ d.label }}</div>
      <div class="wx-icon" style="width: {{ d.iconSize }}px; height: {{ d.iconSize }}px; margin-top: 4px; margin-bottom: 4px">{% for s in d.shapes %}<div class="wx-shape" style="left: {{ s.left }}px; top: {{ s.top }}px; width: {{ s.width }}px; height: {{ s.height }}px; border-radius: {{ s.radius }}px; background-color: {{ s.fill }}; border: {{ s.border }}px solid #000000"></div>{% endfor %}</div>
      <div class="wx-day-temps" style="font-size: {{ data.size.s }}px">{{ d.max }}° / {{ d.min }}°</div>
      <div class="wx-day-text" style="font-size: {{ data.size.xs }}px">{{ d.text }}{% if d.precipitation %} · {{ d.precipitation }}%{% endif %}</div>
    </div>{% endfor %}
  </div>
</div>`

const css = `
.wx { display: flex; flex-direction: column; background-color: #ffffff; color: #000000; font-family: Inter; }
.wx-now { display: flex; flex-direction: row; align-items: center; flex: 1; }
.wx-now-text { display: flex; flex-direction: column; }
.wx-icon { display: flex; position: relative; }
.wx-shape { display: flex; position: absolute; }
.wx-label { display: flex; font-weight: 600; color: #555555; }
.wx-temp { display: flex; font-weight: 700; }
.wx-cond { display: flex; font-weight: 600; }
.wx-detail { display: flex; color: #555555; }
.wx-days { display: flex; flex-direction: row; border-top: 2px solid #000000; }
.wx-day { display: flex; flex: 1; flex-direction: column; align-items: center; }
.wx-day-name { display: flex; font-weight: 700; }
.wx-day-temps { display: flex; font-weight: 600; }
.wx-day-text { display: flex; color: #555555; }
`

class WeatherError extends Error {
  readonly code = 'WEATHER_INVALID'
}

type Series = Record<string, unknown[] | undefined>

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const rounded = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : undefined)

/** The temperature unit as a frame shows it: Open-Meteo says "°C" or "°F". */
function unitOf(units: unknown, key: string, fallback: string): string {
  return isObject(units) && typeof units[key] === 'string' ? (units[key] as string) : fallback
}

export const weather: BuiltinScreen = {
  name: 'weather',
  description: "Current conditions and the next days' forecast from an Open-Meteo style JSON source.",
  template,
  css,
  source: 'json',
  prepare({ raw, variables, now, timeZone, device }) {
    if (isObject(raw) && raw.error === true) {
      throw new WeatherError(`The weather source answered an error: ${String(raw.reason ?? 'no reason given')}`)
    }
    if (!isObject(raw) || (!isObject(raw.current) && !isObject(raw.daily))) {
      throw new WeatherError('The weather source must answer Open-Meteo forecast JSON with `current` or `daily`')
    }
    const size = sizesFor(device)
    const locale = localeVar(variables)
    // Forecast days are the source's local dates; "today" is decided in the source's zone when it says one.
    const zone = zoneVar({ timeZone: variables.timeZone ?? raw.timezone }, timeZone)
    const today = DateTime.fromJSDate(now, { zone }).toISODate()!
    const current = isObject(raw.current) ? raw.current : {}
    const now_ = describeWeatherCode(current.weather_code)
    const iconSize = Math.round(size.xxl * 1.3)

    const daily: Series = isObject(raw.daily) ? (raw.daily as Series) : {}
    const times = Array.isArray(daily.time) ? daily.time : []
    const wanted = numberVar(variables, 'days', 5, 0, 14)
    const first = Math.max(
      0,
      times.findIndex((d) => typeof d === 'string' && d >= today),
    )
    const days = []
    const dayIcon = Math.round(size.l * 1.4)
    for (let i = first; i < times.length && days.length < wanted; i++) {
      const date = String(times[i])
      const parsed = DateTime.fromISO(date, { zone: 'UTC' }).setLocale(locale)
      const described = describeWeatherCode(daily.weather_code?.[i])
      days.push({
        date,
        label: date === today ? 'Today' : parsed.isValid ? parsed.toLocaleString({ weekday: 'short' }) : date,
        max: rounded(daily.temperature_2m_max?.[i]),
        min: rounded(daily.temperature_2m_min?.[i]),
        precipitation: rounded(daily.precipitation_probability_max?.[i]),
        code: daily.weather_code?.[i],
        text: described.text,
        icon: described.icon,
        iconSize: dayIcon,
        shapes: iconShapes(described.icon, dayIcon),
      })
    }
    return {
      label: stringVar(variables, 'label', ''),
      today,
      units: {
        temperature: unitOf(raw.current_units ?? raw.daily_units, 'temperature_2m', unitOf(raw.daily_units, 'temperature_2m_max', '°')),
        wind: unitOf(raw.current_units, 'wind_speed_10m', 'km/h'),
      },
      current: {
        time: current.time,
        temperature: rounded(current.temperature_2m),
        apparent: rounded(current.apparent_temperature),
        humidity: rounded(current.relative_humidity_2m),
        wind: rounded(current.wind_speed_10m),
        code: current.weather_code,
        isDay: current.is_day === 1,
        text: now_.text,
        icon: now_.icon,
        iconSize,
        shapes: iconShapes(now_.icon, iconSize),
      },
      days,
      size,
    }
  },
}
