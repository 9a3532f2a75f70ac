// WMO weather interpretation codes (WMO 4677, as Open-Meteo's `weather_code` uses them) to words
// and to an icon drawn from plain shapes: e-paper frames have no emoji font, and the renderer
// draws positioned boxes well.

export type IconKind = 'clear' | 'partly' | 'cloudy' | 'fog' | 'drizzle' | 'rain' | 'snow' | 'thunder' | 'unknown'

const CODES: Record<number, [string, IconKind]> = {
  0: ['Clear sky', 'clear'],
  1: ['Mainly clear', 'clear'],
  2: ['Partly cloudy', 'partly'],
  3: ['Overcast', 'cloudy'],
  45: ['Fog', 'fog'],
  48: ['Rime fog', 'fog'],
  51: ['Light drizzle', 'drizzle'],
  53: ['Drizzle', 'drizzle'],
  55: ['Dense drizzle', 'drizzle'],
  56: ['Light freezing drizzle', 'drizzle'],
  57: ['Freezing drizzle', 'drizzle'],
  61: ['Light rain', 'rain'],
  63: ['Rain', 'rain'],
  65: ['Heavy rain', 'rain'],
  66: ['Light freezing rain', 'rain'],
  67: ['Freezing rain', 'rain'],
  71: ['Light snow', 'snow'],
  73: ['Snow', 'snow'],
  75: ['Heavy snow', 'snow'],
  77: ['Snow grains', 'snow'],
  80: ['Light showers', 'rain'],
  81: ['Showers', 'rain'],
  82: ['Violent showers', 'rain'],
  85: ['Snow showers', 'snow'],
  86: ['Heavy snow showers', 'snow'],
  95: ['Thunderstorm', 'thunder'],
  96: ['Thunderstorm with hail', 'thunder'],
  99: ['Thunderstorm with heavy hail', 'thunder'],
}

export function describeWeatherCode(code: unknown): { text: string; icon: IconKind } {
  const entry = typeof code === 'number' ? CODES[code] : undefined
  return entry ? { text: entry[0], icon: entry[1] } : { text: 'Unknown', icon: 'unknown' }
}

export type Shape = { left: number; top: number; width: number; height: number; radius: number; fill: string; border: number }

/** The icon as boxes in a square of `size` px: a sun, a cloud, and what falls from it. */
export function iconShapes(kind: IconKind, size: number): Shape[] {
  const u = size / 100
  const box = (left: number, top: number, width: number, height: number, radius: number, fill = '#000000', border = 0): Shape => ({
    left: Math.round(left * u),
    top: Math.round(top * u),
    width: Math.max(1, Math.round(width * u)),
    height: Math.max(1, Math.round(height * u)),
    radius: Math.round(radius * u),
    fill,
    border: Math.round(border * u),
  })
  const cloud = (top: number, fill: string) => [box(30, top, 40, 36, 18, fill, 5), box(12, top + 16, 76, 30, 15, fill, 5)]
  switch (kind) {
    case 'clear':
      return [box(25, 25, 50, 50, 25)]
    case 'partly':
      return [box(45, 8, 44, 44, 22), ...cloud(26, '#ffffff')]
    case 'cloudy':
      return cloud(22, '#aaaaaa')
    case 'fog':
      return [box(10, 25, 80, 8, 4), box(20, 45, 70, 8, 4), box(10, 65, 80, 8, 4)]
    case 'drizzle':
      return [...cloud(8, '#ffffff'), box(30, 66, 6, 10, 3), box(50, 70, 6, 10, 3), box(70, 66, 6, 10, 3)]
    case 'rain':
      return [...cloud(8, '#ffffff'), box(28, 62, 6, 26, 3), box(48, 66, 6, 26, 3), box(68, 62, 6, 26, 3)]
    case 'snow':
      return [...cloud(8, '#ffffff'), box(26, 66, 10, 10, 5), box(46, 78, 10, 10, 5), box(66, 66, 10, 10, 5)]
    case 'thunder':
      return [...cloud(8, '#aaaaaa'), box(46, 60, 10, 18, 0), box(40, 76, 10, 18, 0)]
    default:
      return [box(20, 20, 60, 60, 30, '#ffffff', 6)]
  }
}
