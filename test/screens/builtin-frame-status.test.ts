// The frame-status screen: battery, online, last seen, firmware and Wi-Fi from the device context.
import t from 'tap'
import { builtinScreens } from '../../src/screens/builtin/index.js'
import { wifiQuality } from '../../src/screens/builtin/frame-status.js'
import { renderBuiltin, visibleText } from '../helpers/screen-render.js'

const screen = builtinScreens['frame-status']!
const now = new Date('2026-11-28T12:00:00Z')

t.test("the frame's facts are on the screen", async (t) => {
  const device = {
    id: 'd1',
    name: 'Kitchen',
    width: 800,
    height: 480,
    batteryPercent: 73.4,
    lastSeenAt: '2026-11-28T11:55:00Z',
    online: true,
    firmwareVersion: '1.6.5',
    wifiRssi: -63,
  }
  const { html } = renderBuiltin(screen, {
    raw: undefined,
    variables: { timeZone: 'Europe/Berlin', locale: 'en-GB' },
    now,
    timeZone: 'UTC',
    device,
  })
  const text = visibleText(html)
  t.match(text, 'Kitchen')
  t.match(text, 'Online')
  t.match(text, 'Battery 73%')
  t.match(html, 'fs-meter-fill" style="width: 73%')
  t.match(text, '5 minutes ago')
  t.match(text, '12:55', 'last seen in the chosen zone')
  t.match(text, 'Firmware 1.6.5')
  t.match(text, 'Good (-63 dBm)')
  t.equal((html.match(/fs-bar fs-bar-on/g) ?? []).length, 3)
  t.match(text, '800 × 480')
})

t.test('an offline frame with nothing reported, and no device at all', async (t) => {
  const offline = renderBuiltin(screen, {
    raw: undefined,
    variables: {},
    now,
    timeZone: 'UTC',
    device: { id: 'd2', name: 'Hall', width: 400, height: 300, online: false },
  })
  const text = visibleText(offline.html)
  t.match(text, 'Offline')
  t.match(text, 'Battery Unknown')
  t.match(text, 'Last seen Never')
  t.match(text, 'Wi-Fi signal Unknown')
  const none = renderBuiltin(screen, { raw: undefined, variables: {}, now, timeZone: 'UTC' })
  t.match(visibleText(none.html), 'Status unknown')
})

t.test('Wi-Fi words by RSSI', async (t) => {
  t.same(
    [-40, -60, -70, -80, -90].map((r) => wifiQuality(r).label),
    ['Excellent', 'Good', 'Fair', 'Weak', 'Very weak'],
  )
})
