// A local weather API answering in Open-Meteo's real forecast shape (GET /v1/forecast), for the
// weather screen's tests and the screens backend's end-to-end tests: like the real API it answers
// only the variables asked for (`current=`, `daily=`), reports units beside them, honours
// `temperature_unit=fahrenheit`, `forecast_days` and `timezone`, and answers a bad request with
// 400 {"error": true, "reason": ...}. Tests change `weather.conditions` to change the forecast.
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

type Test = { teardown(fn: () => unknown): void }

export type Conditions = {
  /** The "now" of the forecast: the first daily date is its local date. */
  now: Date
  timezone: string
  current: { temperature: number; apparent: number; humidity: number; wind: number; code: number; isDay: boolean }
  /** One entry per day from today, as many as forecast_days asks for (repeated when fewer). */
  daily: { max: number; min: number; code: number; precipitation: number }[]
}

export type WeatherServer = {
  /** The forecast endpoint, ready for query parameters: `${url}?latitude=..`. */
  url: string
  requests: { path: string; query: URLSearchParams; headers: IncomingHttpHeaders }[]
  conditions: Conditions
  /** A URL asking for what the weather screen shows. */
  forecastUrl(params?: Record<string, string>): string
}

const defaultConditions = (): Conditions => ({
  now: new Date('2026-11-28T09:00:00Z'),
  timezone: 'Europe/Berlin',
  current: { temperature: 3.4, apparent: -0.6, humidity: 87, wind: 14.2, code: 61, isDay: true },
  daily: [
    { max: 5.1, min: 0.8, code: 61, precipitation: 80 },
    { max: 7.6, min: 2.2, code: 3, precipitation: 20 },
    { max: 2.4, min: -3.9, code: 73, precipitation: 65 },
    { max: 1.0, min: -5.2, code: 0, precipitation: 0 },
    { max: 4.3, min: -1.7, code: 2, precipitation: 5 },
    { max: 8.9, min: 3.3, code: 95, precipitation: 90 },
    { max: 6.0, min: 1.1, code: 45, precipitation: 10 },
  ],
})

const CURRENT_UNITS: Record<string, string> = {
  temperature_2m: '°C',
  apparent_temperature: '°C',
  relative_humidity_2m: '%',
  wind_speed_10m: 'km/h',
  weather_code: 'wmo code',
  is_day: '',
}
const DAILY_UNITS: Record<string, string> = {
  temperature_2m_max: '°C',
  temperature_2m_min: '°C',
  weather_code: 'wmo code',
  precipitation_probability_max: '%',
}

const round1 = (n: number) => Math.round(n * 10) / 10
const toF = (c: number) => round1((c * 9) / 5 + 32)

function localParts(at: Date, timeZone: string): { date: string; minute: string; offsetSeconds: number; abbreviation: string } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  )
  const date = `${parts.year}-${parts.month}-${parts.day}`
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute))
  const offsetSeconds = Math.round((wall - Math.floor(at.getTime() / 60_000) * 60_000) / 1000)
  const abbreviation = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'short' })
    .formatToParts(at)
    .find((p) => p.type === 'timeZoneName')!.value
  return { date, minute: `${date}T${parts.hour}:${parts.minute}`, offsetSeconds, abbreviation }
}

/** The body the real API answers for these query parameters, or the error it would give. */
function forecastBody(query: URLSearchParams, c: Conditions): { status: number; body: unknown } {
  const latitude = Number(query.get('latitude'))
  const longitude = Number(query.get('longitude'))
  if (!query.has('latitude') || !query.has('longitude') || !Number.isFinite(latitude) || !Number.isFinite(longitude)) {
    return { status: 400, body: { error: true, reason: "Parameter 'latitude' and 'longitude' must have the same number of elements" } }
  }
  const tzParam = query.get('timezone') ?? 'GMT'
  const timezone = tzParam === 'auto' ? c.timezone : tzParam
  const fahrenheit = query.get('temperature_unit') === 'fahrenheit'
  const t = (celsius: number) => (fahrenheit ? toF(celsius) : round1(celsius))
  const local = localParts(c.now, timezone === 'GMT' ? 'UTC' : timezone)
  const body: Record<string, unknown> = {
    latitude: round1(latitude * 100) / 100,
    longitude: round1(longitude * 100) / 100,
    generationtime_ms: 0.07,
    utc_offset_seconds: local.offsetSeconds,
    timezone,
    timezone_abbreviation: local.abbreviation,
    elevation: 38,
  }
  const unit = (u: string) => (fahrenheit && u === '°C' ? '°F' : u)
  const current = (query.get('current') ?? '').split(',').filter((v) => v in CURRENT_UNITS)
  if (current.length > 0) {
    const values: Record<string, number> = {
      temperature_2m: t(c.current.temperature),
      apparent_temperature: t(c.current.apparent),
      relative_humidity_2m: c.current.humidity,
      wind_speed_10m: c.current.wind,
      weather_code: c.current.code,
      is_day: c.current.isDay ? 1 : 0,
    }
    // The real API rounds "now" down to its 15-minute interval.
    const minute = Number(local.minute.slice(-2))
    const time = `${local.minute.slice(0, -2)}${String(minute - (minute % 15)).padStart(2, '0')}`
    body.current_units = { time: 'iso8601', interval: 'seconds', ...Object.fromEntries(current.map((v) => [v, unit(CURRENT_UNITS[v]!)])) }
    body.current = { time, interval: 900, ...Object.fromEntries(current.map((v) => [v, values[v]])) }
  }
  const daily = (query.get('daily') ?? '').split(',').filter((v) => v in DAILY_UNITS)
  if (daily.length > 0) {
    const count = Math.min(16, Math.max(1, Number(query.get('forecast_days') ?? 7) || 7))
    const start = Date.parse(`${local.date}T00:00:00Z`)
    const time = Array.from({ length: count }, (_, i) => new Date(start + i * 86_400_000).toISOString().slice(0, 10))
    const day = (i: number) => c.daily[i % c.daily.length]!
    const series: Record<string, (i: number) => number> = {
      temperature_2m_max: (i) => t(day(i).max),
      temperature_2m_min: (i) => t(day(i).min),
      weather_code: (i) => day(i).code,
      precipitation_probability_max: (i) => day(i).precipitation,
    }
    body.daily_units = { time: 'iso8601', ...Object.fromEntries(daily.map((v) => [v, unit(DAILY_UNITS[v]!)])) }
    body.daily = { time, ...Object.fromEntries(daily.map((v) => [v, time.map((_, i) => series[v]!(i))])) }
  }
  return { status: 200, body }
}

export async function startWeatherServer(t: Test, conditions: Conditions = defaultConditions()): Promise<WeatherServer> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    weather.requests.push({ path: url.pathname, query: url.searchParams, headers: req.headers })
    const answer =
      req.method === 'GET' && url.pathname === '/v1/forecast'
        ? forecastBody(url.searchParams, weather.conditions)
        : { status: 404, body: { error: true, reason: 'Not Found' } }
    res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' })
    res.end(JSON.stringify(answer.body))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/forecast`
  const weather: WeatherServer = {
    url: base,
    requests: [],
    conditions,
    forecastUrl: (params = {}) =>
      `${base}?${new URLSearchParams({
        latitude: '52.52',
        longitude: '13.41',
        current: 'temperature_2m,apparent_temperature,relative_humidity_2m,wind_speed_10m,weather_code,is_day',
        daily: 'weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max',
        timezone: 'auto',
        ...params,
      })}`,
  }
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return weather
}
