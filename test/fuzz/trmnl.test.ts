// TRMNL's device protocol fuzzed header by header (issue 30, item 6): every header the firmware
// sends (and special_function) replaced, one at a time, by prototype names, huge and malformed
// values, on a claimed device, a pending one and a setup. No answer is a 5xx; every error is
// {message, code} and also a display answer the firmware handles safely (status 0, no reset,
// refresh_rate of at least a minute); every display answer asks for at least a minute; and the
// devices still read afterwards.
import t from 'tap'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { appFetch } from '../helpers/app-fetch.js'

/** Header values: prototype names, numbers the parsers trip on, sizes, and bytes a header may carry. */
const BAD: string[] = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
  ' ',
  '0',
  '-1',
  '1.5',
  '0.5e3',
  '1e308',
  '-1e308',
  'NaN',
  'Infinity',
  '0x320',
  '9'.repeat(40),
  `${Date.now()}.5`,
  'x'.repeat(8000),
  '../../etc/passwd',
  '%00',
  '\u00ff\u00fe',
  '{"a":1}',
  'true',
  'AA:BB:CC:DD:EE:FF',
]

const HEADERS = [
  'ID',
  'Access-Token',
  'FW-Version',
  'Model',
  'Width',
  'Height',
  'Refresh-Rate',
  'Battery-Voltage',
  'Percent-Charged',
  'RSSI',
  'X-Public-Key',
  'X-Signature',
  'X-Timestamp',
  'special_function',
]

t.test('every TRMNL header, fuzzed: no 5xx, firmware-safe answers, devices still readable', async (t) => {
  const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0', RATE_LIMIT_MAX: '100000' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('fuzz-trmnl'))
  const setup = async (mac: string) =>
    (await (await appFetch(`${svc.url}/api/setup`, { headers: { ID: mac, 'FW-Version': '1.8.14', Model: 'og' } })).json()) as {
      api_key: string
      friendly_id: string
    }
  const claimedMac = 'A0:B7:65:1C:3D:01'
  const claimed = await setup(claimedMac)
  const dev = await jsonCall(svc.url, '/api/device/validate', { token, body: { pinCode: claimed.friendly_id, name: 'Fuzzed' } })
  t.equal(dev.status, 200)
  const pendingMac = 'A0:B7:65:1C:3D:02'
  const pending = await setup(pendingMac)
  const base = (mac: string, key: string): Record<string, string> => ({
    ID: mac,
    'Access-Token': key,
    'FW-Version': '1.8.14',
    Model: 'og',
    Width: '800',
    Height: '480',
    'Refresh-Rate': '900',
    'Battery-Voltage': '3.9',
    RSSI: '-60',
  })

  const problems: string[] = []
  const check = async (label: string, res: Response) => {
    const text = await res.text()
    if (res.status >= 500) return problems.push(`${label}: ${res.status} ${text.slice(0, 120)}`)
    let body: Record<string, unknown>
    try {
      body = JSON.parse(text)
    } catch {
      return res.status === 204 ? undefined : problems.push(`${label}: not JSON (${res.status})`)
    }
    if (res.status >= 400 && (typeof body.message !== 'string' || typeof body.code !== 'string'))
      return problems.push(`${label}: ${res.status} without {message, code}`)
    const display = res.status >= 400 || 'refresh_rate' in body
    if (display && (body.status === 500 || body.reset_firmware === true)) return problems.push(`${label}: a reset`)
    if (display && !(typeof body.refresh_rate === 'number' && body.refresh_rate >= 60))
      return problems.push(`${label}: refresh_rate ${String(body.refresh_rate)}`)
    return undefined
  }

  let requests = 0
  for (const header of HEADERS) {
    for (const value of BAD) {
      for (const [who, mac, key] of [
        ['claimed', claimedMac, claimed.api_key],
        ['pending', pendingMac, pending.api_key],
      ] as const) {
        const headers = { ...base(mac, key), [header]: value }
        const label = `${who} ${header}=${JSON.stringify(value.slice(0, 20))}`
        await check(`display ${label}`, await appFetch(`${svc.url}/api/display`, { headers }))
        await check(
          `log ${label}`,
          await appFetch(`${svc.url}/api/log`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ logs: [{ message: 'fuzz', level: value, created_at: 1_780_000_000 }] }),
          }),
        )
        requests += 2
      }
    }
  }
  // /api/setup takes 10 a minute from one address: the model (the header looked up in tables) and
  // sizes first; the rest meet the limit, whose 429 must be as safe.
  for (const [header, value] of [
    ['Model', '__proto__'],
    ['Model', 'constructor'],
    ['Model', 'toString'],
    ['Model', 'x'.repeat(8000)],
    ['Width', '1e308'],
    ['Height', '-1'],
    ['FW-Version', 'x'.repeat(8000)],
    ['ID', '__proto__'],
    ['Model', 'hasOwnProperty'],
    ['Width', '0x320'],
    ['Model', 'valueOf'],
    ['Model', 'x'],
  ]) {
    const headers = { ID: 'A0:B7:65:1C:3D:03', 'FW-Version': '1.8.14', Model: 'og', [header!]: value! }
    await check(`setup ${header}=${value!.slice(0, 20)}`, await appFetch(`${svc.url}/api/setup`, { headers }))
    requests++
  }
  t.same(problems, [], `${requests} requests`)

  const list = await jsonCall(svc.url, '/api/device', { token })
  t.equal(list.status, 200)
  t.notOk(list.body.unreadable, 'no record left unreadable')
  t.match(await jsonCall(svc.url, `/api/device/${dev.body.device.id}`, { token }), {
    status: 200,
    body: { display: { width: 800, height: 480 } },
  })
  t.equal(
    (await appFetch(`${svc.url}/api/display`, { headers: base(claimedMac, claimed.api_key) })).status,
    200,
    'and the frame still polls',
  )
})
