// The simulator follows its day plan: it shows the schedule its config carries, goes away for a
// sleep window (nothing is sent meanwhile), comes back at its end and shows what plays then. The
// simulator and the service share one clock that the test moves.
import t from 'tap'
import { join } from 'node:path'
import { SimDevice, resolveProfile } from '../../device-sim/index.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { jsonCall } from '../helpers/http.js'
import { mqttUrl } from '../helpers/mqtt.js'
import { nextEvent, tempDir } from '../device-sim/helpers.js'
import { uploadPng } from '../helpers/uploads.js'

let now = Date.parse('2026-06-01T20:50:00Z')
const clock = () => new Date(now)

t.test('the simulator sleeps through its sleep window and wakes to the current item', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('sim-sleep'))
  const dir = await tempDir(t)
  const dev = new SimDevice({
    server: svc.url,
    mqttUrl: mqttUrl(svc),
    name: 'bedroom',
    display: resolveProfile('bw-800x480'),
    statePath: join(dir, 'bedroom.json'),
    claimToken: token,
    clock,
  })
  t.teardown(() => dev.stop())
  await dev.start()
  const id = dev.deviceId!

  const items = [
    { kind: 'upload', key: await uploadPng(svc.url, token, 'white', 160, 120) },
    { kind: 'upload', key: await uploadPng(svc.url, token, 'black', 160, 120) },
  ]
  const list = (await jsonCall(svc.url, '/api/playlists', { token, body: { name: 'Night', mode: 'sequential', itemSeconds: 3600, items } }))
    .body
  const planned = nextEvent(dev, 'schedule')
  const put = await jsonCall(svc.url, `/api/device/${id}/schedule`, {
    token,
    method: 'PUT',
    body: {
      timeZone: 'Europe/Berlin',
      rules: [{ playlistId: list.id, days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from: '06:00', to: '23:00' }],
      sleep: [{ from: '23:00', to: '06:30' }],
    },
  })
  t.equal(put.status, 200)
  await svc.app.scheduler!.tick()
  const first = await planned
  t.match(first, { timeZone: 'Europe/Berlin', sleep: [{ from: '23:00', to: '06:30' }], sleepingUntil: null }, 'the simulator has the plan')

  // 23:00 in Berlin: the config says sleep until 06:30, and the simulator goes away.
  const sleeping = nextEvent(dev, 'sleeping')
  const gone = nextEvent(dev, 'disconnected')
  now = Date.parse('2026-06-01T21:00:00Z')
  await svc.app.scheduler!.tick()
  t.match(await sleeping, { until: '2026-06-02T04:30:00.000Z' })
  t.equal((await gone).reason, 'sleep')
  const shownBefore = dev.stats.images

  // Moving the clock past 06:30 wakes it; the turn of 07:15 (the second item) is what it gets, once.
  const back = nextEvent(dev, 'connected')
  now = Date.parse('2026-06-02T05:15:00Z')
  await back
  const image = nextEvent(dev, 'image')
  await svc.app.scheduler!.tick()
  t.ok((await image).message.imageId, 'the current item, after waking')
  t.equal(dev.stats.images, shownBefore + 1, 'one image, not the night’s backlog')
})
