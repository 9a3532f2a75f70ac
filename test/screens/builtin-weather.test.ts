// The weather screen, fed by a local server answering in Open-Meteo's real shape.
import t from 'tap'
import { builtinScreens } from '../../src/screens/builtin/index.js'
import { describeWeatherCode } from '../../src/screens/builtin/wmo.js'
import { renderBuiltin, visibleText } from '../helpers/screen-render.js'
import { startWeatherServer } from '../helpers/weather-server.js'

const weather = builtinScreens.weather!
const device = { id: 'd1', name: 'Hall', width: 800, height: 480 }

async function fetchJson(url: string): Promise<unknown> {
  const res = await fetch(url)
  return res.json()
}

t.test('current conditions and the next days from the API answer', async (t) => {
  const server = await startWeatherServer(t)
  const raw = await fetchJson(server.forecastUrl())
  const now = server.conditions.now
  const { html, data } = renderBuiltin(weather, { raw, variables: { label: 'Berlin', locale: 'en-GB' }, now, timeZone: 'UTC', device })
  const text = visibleText(html)
  t.match(text, 'Berlin')
  t.match(text, '3°C', 'the current temperature, rounded, with the unit the API gave')
  t.match(text, 'Light rain')
  t.match(text, 'Feels like -1°C')
  t.match(text, 'Humidity 87%')
  t.match(text, 'Wind 14 km/h')
  t.match(text, 'Today 5° / 1° Light rain · 80%')
  t.match(text, 'Sun 8° / 2° Overcast · 20%')
  t.match(text, 'Mon 2° / -4° Snow · 65%')
  const days = data.days as { date: string }[]
  t.equal(days.length, 5)
  t.equal(days[0]!.date, '2026-11-28')
  t.match(html, /class="wx-shape"/, 'icons are drawn from shapes')
  t.equal(server.requests[0]!.query.get('timezone'), 'auto')
})

t.test('Fahrenheit when asked for, and a changed forecast shows', async (t) => {
  const server = await startWeatherServer(t)
  server.conditions.current.temperature = 30
  server.conditions.current.code = 95
  const raw = await fetchJson(server.forecastUrl({ temperature_unit: 'fahrenheit', forecast_days: '3' }))
  const { html, data } = renderBuiltin(weather, { raw, variables: { days: 7 }, now: server.conditions.now, timeZone: 'UTC', device })
  t.match(visibleText(html), '86°F')
  t.match(visibleText(html), 'Thunderstorm')
  t.equal((data.days as unknown[]).length, 3, 'no more days than the answer has')
})

t.test("the days start at today in the source's zone", async (t) => {
  const server = await startWeatherServer(t)
  const raw = (await fetchJson(server.forecastUrl())) as any
  // A day later than the answer was made: yesterday's entry is skipped.
  const { data } = renderBuiltin(weather, { raw, variables: {}, now: new Date('2026-11-29T08:00:00Z'), timeZone: 'UTC', device })
  t.equal((data.days as { date: string; label: string }[])[0]!.date, '2026-11-29')
  t.equal((data.days as { date: string; label: string }[])[0]!.label, 'Today')
})

t.test('an API error or another shape is an error with a code', async (t) => {
  const server = await startWeatherServer(t)
  const res = await fetch(`${server.url}?current=temperature_2m`)
  t.equal(res.status, 400)
  const raw = await res.json()
  t.throws(() => weather.prepare({ raw, variables: {}, now: new Date(), timeZone: 'UTC' }), {
    code: 'WEATHER_INVALID',
    message: /latitude/,
  })
  t.throws(() => weather.prepare({ raw: [1, 2], variables: {}, now: new Date(), timeZone: 'UTC' }), { code: 'WEATHER_INVALID' })
  t.throws(() => weather.prepare({ raw: { temp: 3 }, variables: {}, now: new Date(), timeZone: 'UTC' }), { code: 'WEATHER_INVALID' })
})

t.test('WMO codes in words', async (t) => {
  t.same(describeWeatherCode(0), { text: 'Clear sky', icon: 'clear' })
  t.same(describeWeatherCode(82), { text: 'Violent showers', icon: 'rain' })
  t.same(describeWeatherCode(999), { text: 'Unknown', icon: 'unknown' })
})
