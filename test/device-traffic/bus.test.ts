// The bus the transports are given before the durable downlink and firmware exist: what arrives
// before they attach is answered as "nothing stored", and once attached every call reaches them.
import t from 'tap'
import { createDeviceTraffic } from '../../src/device-traffic/bus.js'
import type { OtaReport } from '../../src/mqtt/contract.js'

t.test('before a downlink is attached, acknowledgements match nothing and nothing is resent', async (t) => {
  const traffic = createDeviceTraffic()
  t.equal(await traffic.downlink.delivered('d1', 3), undefined)
  t.equal(await traffic.downlink.resend('d1', {}), 0)
  t.equal(await traffic.downlink.reported('d1', { configVersion: 2 }), undefined)
  t.doesNotThrow(() => traffic.downlink.expectResend('d1', true))
  t.equal(await traffic.ota('d1', { version: '1.2.0', state: 'downloading' }), false, 'progress with no handler matches no offer')
  await traffic.status('d1', { battery: 50 })
})

t.test('an attached downlink gets every call with its arguments, and its answers are returned', async (t) => {
  const traffic = createDeviceTraffic()
  const calls: unknown[][] = []
  traffic.attachDownlink({
    delivered: async (...args) => (calls.push(['delivered', ...args]), 'config'),
    reported: async (...args) => void calls.push(['reported', ...args]),
    resend: async (...args) => (calls.push(['resend', ...args]), 4),
    expectResend: (...args) => void calls.push(['expectResend', ...args]),
  })
  t.equal(await traffic.downlink.delivered('d1', 7), 'config')
  t.equal(await traffic.downlink.resend('d1', { after: 2 }), 4)
  await traffic.downlink.reported('d1', { shownImageId: null })
  traffic.downlink.expectResend('d1', false)
  t.same(calls, [
    ['delivered', 'd1', 7],
    ['resend', 'd1', { after: 2 }],
    ['reported', 'd1', { shownImageId: null }],
    ['expectResend', 'd1', false],
  ])
  t.throws(() => traffic.attachDownlink({} as never), /already attached/, 'one downlink only')
})

t.test('status reports reach listeners in the order they attached, each finished before the next', async (t) => {
  const traffic = createDeviceTraffic()
  const seen: string[] = []
  traffic.onStatus(async (id, report) => {
    await new Promise((r) => setTimeout(r, 20))
    seen.push(`health ${id} ${report.battery}`)
  })
  traffic.onStatus(async (id, report) => void seen.push(`firmware ${id} ${report.firmware}`))
  await traffic.status('d1', { battery: 40, firmware: '1.0.0' })
  t.same(seen, ['health d1 40', 'firmware d1 1.0.0'])
})

t.test('a listener that fails stops the report there, and the transport sees the error', async (t) => {
  const traffic = createDeviceTraffic()
  let later = false
  traffic.onStatus(async () => {
    throw new Error('database away')
  })
  traffic.onStatus(async () => void (later = true))
  await t.rejects(traffic.status('d1', {}), /database away/)
  t.equal(later, false)
})

t.test('firmware progress goes to its one handler', async (t) => {
  const traffic = createDeviceTraffic()
  const reports: unknown[] = []
  traffic.handleOta(async (id, report) => (reports.push([id, report]), true))
  const report: OtaReport = { version: '1.2.0', state: 'succeeded' }
  t.equal(await traffic.ota('d2', report), true)
  t.same(reports, [['d2', report]])
  t.throws(() => traffic.handleOta(async () => false), /already attached/)
})
