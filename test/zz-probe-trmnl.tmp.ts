import { startApp } from './helpers/app.js'
import { makeClient, signUp, uniqueEmail } from './helpers/client.js'
import { jsonCall } from './helpers/http.js'
import http from 'node:http'

const teardowns: Array<() => unknown> = []
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) }
let now = Date.parse('2026-06-01T12:00:00Z')
const clock = () => new Date(now)
const MAC = 'A0:B7:65:1C:2D:3E'
const H = (tok: string, extra: Record<string, string> = {}) => ({
  ID: MAC,
  'Access-Token': tok,
  'Refresh-Rate': '900',
  'Battery-Voltage': '3.9',
  'FW-Version': '1.5.2',
  Model: 'og',
  RSSI: '-61',
  Width: '800',
  Height: '480',
  ...extra,
})
async function req(url: string, init: RequestInit = {}) {
  const r = await fetch(url, init)
  const text = await r.text()
  return `${r.status} ${text.slice(0, 200)}`
}
function raw(url: string, method: string, headers: [string, string][], body?: string): Promise<string> {
  return new Promise((resolve) => {
    const u = new URL(url)
    const r = http.request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers: headers.flat() as any },
      (res) => {
        let d = ''
        res.on('data', (c) => (d += c))
        res.on('end', () => resolve(`${res.statusCode} ${d.slice(0, 200)}`))
      },
    )
    if (body) r.write(body)
    r.end()
  })
}
const svc = await startApp(t as any, {
  clock,
  env: { DEVICE_POLL_INTERVAL: '0', TRMNL_REFRESH_SECONDS: '600', TRMNL_OFFLINE_MARGIN_SECONDS: '60' },
})
try {
  const { token: owner } = await signUp(makeClient(svc.url).client, uniqueEmail('probe'))
  const s = await (await fetch(`${svc.url}/api/setup`, { headers: { ID: MAC, Model: 'og' } })).json()
  const key = s.api_key
  console.log(
    'log pending:',
    await req(`${svc.url}/api/log`, {
      method: 'POST',
      headers: { ...H(key), 'content-type': 'application/json' },
      body: '{"logs":[{"message":"hi","level":"info","created_at":1}]}',
    }),
  )
  console.log(
    'log pending empty:',
    await req(`${svc.url}/api/log`, { method: 'POST', headers: { ...H(key), 'content-type': 'application/json' }, body: '{"logs":[]}' }),
  )
  console.log('display HEAD-less pending:', await req(`${svc.url}/api/display`, { headers: H(key) }))
  const c = await jsonCall(svc.url, '/api/device/validate', { token: owner, body: { pinCode: s.friendly_id, name: 'P' } })
  const deviceId = c.body.device.id
  console.log('display:', await req(`${svc.url}/api/display`, { headers: H(key) }))
  console.log(
    'log non-json:',
    await req(`${svc.url}/api/log`, { method: 'POST', headers: { ...H(key), 'content-type': 'application/json' }, body: '{logs:' }),
  )
  console.log(
    'log text/plain:',
    await req(`${svc.url}/api/log`, { method: 'POST', headers: { ...H(key), 'content-type': 'text/plain' }, body: 'hello' }),
  )
  console.log('log no body:', await req(`${svc.url}/api/log`, { method: 'POST', headers: { ...H(key) } }))
  console.log(
    'log logs not array:',
    await req(`${svc.url}/api/log`, { method: 'POST', headers: { ...H(key), 'content-type': 'application/json' }, body: '{"logs":5}' }),
  )
  console.log(
    'log weird entries:',
    await req(`${svc.url}/api/log`, {
      method: 'POST',
      headers: { ...H(key), 'content-type': 'application/json' },
      body: '{"logs":[1,null,"x",[],{"message":5},{"message":"m","created_at":1e308},{"message":"n","created_at":-5,"level":7},{"message":"o","created_at":"bad","level":"FATAL"},{"message":"q","fields":3}]}',
    }),
  )
  console.log(
    'log toplevel array:',
    await req(`${svc.url}/api/log`, { method: 'POST', headers: { ...H(key), 'content-type': 'application/json' }, body: '[1]' }),
  )
  console.log(
    'log null:',
    await req(`${svc.url}/api/log`, { method: 'POST', headers: { ...H(key), 'content-type': 'application/json' }, body: 'null' }),
  )
  const { execFileSync } = await import('node:child_process')
  const big = JSON.stringify({ logs: Array.from({ length: 90 }, (_, i) => ({ message: 'x'.repeat(1500), id: i })) })
  const cu = (args: string[]) => {
    try {
      return execFileSync('curl', ['-s', '-w', ' %{http_code}', ...args])
        .toString()
        .slice(-250)
    } catch (e: any) {
      return String(e.stdout)
    }
  }
  console.log(
    'curl chunked big:',
    cu([
      '-X',
      'POST',
      '-H',
      `ID: ${MAC}`,
      '-H',
      `Access-Token: ${key}`,
      '-H',
      'content-type: application/json',
      '-H',
      'Transfer-Encoding: chunked',
      '--data-binary',
      big,
      `${svc.url}/api/log`,
    ]),
  )
  console.log('curl dup ID:', cu(['-H', `ID: ${MAC}`, '-H', `ID: ${MAC}`, '-H', `Access-Token: ${key}`, `${svc.url}/api/display`]))
  console.log(
    'curl dup token:',
    cu(['-H', `ID: ${MAC}`, '-H', `Access-Token: ${key}`, '-H', `Access-Token: ${key}`, `${svc.url}/api/display`]),
  )
  console.log('curl dup model setup:', cu(['-H', `ID: ${MAC}`, '-H', 'Model: og', '-H', 'Model: v2', `${svc.url}/api/setup`]))
  console.log(
    'log chunked big:',
    await raw(
      `${svc.url}/api/log`,
      'POST',
      [
        ['ID', MAC],
        ['Access-Token', key],
        ['content-type', 'application/json'],
        ['transfer-encoding', 'chunked'],
      ],
      JSON.stringify({ logs: Array.from({ length: 90 }, (_, i) => ({ message: 'x'.repeat(1500), id: i })) }),
    ),
  )
  const logs = (await jsonCall(svc.url, `/api/device/${deviceId}/logs?limit=200`, { token: owner })).body
  console.log('stored logs:', logs.logs?.length, JSON.stringify(logs.logs?.slice(-4).map((l: any) => [l.level, l.message, l.fields])))
  console.log(
    'display dup ID:',
    await raw(`${svc.url}/api/display`, 'GET', [
      ['ID', MAC],
      ['ID', MAC],
      ['Access-Token', key],
    ]),
  )
  console.log(
    'display dup token:',
    await raw(`${svc.url}/api/display`, 'GET', [
      ['ID', MAC],
      ['Access-Token', key],
      ['Access-Token', key],
    ]),
  )
  console.log(
    'display huge nums:',
    await req(`${svc.url}/api/display`, {
      headers: H(key, { 'Refresh-Rate': '9999999999', 'Battery-Voltage': '-1', RSSI: '1e309', Width: '-5', Height: 'NaN' }),
    }),
  )
  console.log('display long RR:', await req(`${svc.url}/api/display`, { headers: H(key, { 'Refresh-Rate': '99999999999' }) }))
  console.log('display lowercase mac:', await req(`${svc.url}/api/display`, { headers: H(key, { ID: MAC.toLowerCase() }) }))
  console.log('display no ID:', await req(`${svc.url}/api/display`, { headers: { 'Access-Token': key } }))
  console.log('display empty token:', await req(`${svc.url}/api/display`, { headers: { ID: MAC, 'Access-Token': '' } }))
  console.log('display long token:', await req(`${svc.url}/api/display`, { headers: { ID: MAC, 'Access-Token': 'x'.repeat(500) } }))
  console.log('setup bad mac:', await req(`${svc.url}/api/setup`, { headers: { ID: 'zz' } }))
  console.log('setup long model:', await req(`${svc.url}/api/setup`, { headers: { ID: MAC, Model: 'x'.repeat(100) } }))
  console.log('setup odd width:', await req(`${svc.url}/api/setup`, { headers: { ID: MAC, Model: 'zzz', Width: '99999', Height: '-3' } }))
  console.log('setup huge dims:', await req(`${svc.url}/api/setup`, { headers: { ID: MAC, Model: 'zzz', Width: '4096', Height: '4096' } }))
  console.log('image bad exp:', await req(`${svc.url}/api/trmnl/images/${crypto.randomUUID()}/bmp1?exp=abc&sig=zz`))
  console.log('image exp 1e20:', await req(`${svc.url}/api/trmnl/images/${crypto.randomUUID()}/bmp1?exp=100000000000&sig=zz`))
  console.log('image bad uuid:', await req(`${svc.url}/api/trmnl/images/nope/bmp1`))
  console.log('screen bad kind:', await req(`${svc.url}/api/trmnl/screens/other/${deviceId}`))
  console.log('screen paired own headers:', (await req(`${svc.url}/api/trmnl/screens/paired/${deviceId}`, { headers: H(key) })).slice(0, 8))
  console.log('screen exp array:', await req(`${svc.url}/api/trmnl/screens/paired/${deviceId}?exp=1&exp=2&sig=a`))
  console.log('HEAD image', await req(`${svc.url}/api/trmnl/screens/paired/${deviceId}`, { method: 'HEAD', headers: H(key) }))
  // command
  await jsonCall(svc.url, `/api/device/${deviceId}/command`, { token: owner, body: { command: 'reboot' } })
  console.log('display w/ reboot:', await req(`${svc.url}/api/display`, { headers: H(key) }))
  // expired pairing that was never claimed
  const s2 = await (await fetch(`${svc.url}/api/setup`, { headers: { ID: 'A0:B7:65:1C:2D:40', Model: 'og' } })).json()
  now += 3600 * 1000 * 24
  console.log(
    'pending after 1 day (no sweep):',
    await req(`${svc.url}/api/display`, { headers: { ID: 'A0:B7:65:1C:2D:40', 'Access-Token': s2.api_key } }),
  )
  await svc.app.inject({ method: 'GET', url: '/health' }).catch(() => {})
} finally {
  for (const f of teardowns.reverse()) await f()
}
