// A prompt item generates a fresh image each time it comes up, charged like any generation: with
// too few credits it is skipped (an event says why), with credits the job is paid for and its
// image reaches the device. The paid model's provider is a local server speaking Replicate's
// predictions API.
import t from 'tap'
import { creditUser, signUpAdmin } from '../helpers/admin.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { replicateServer, TOKEN } from '../helpers/replicate-server.js'

let now = Date.parse('2026-06-01T07:55:00Z')
const clock = () => new Date(now)

t.test('a prompt item is skipped without credits and generated, paid for and shown with them', async (t) => {
  const replicate = await replicateServer(t, { poll: (_p, succeeded) => succeeded() })
  const adminEmail = uniqueEmail('sched-admin')
  const svc = await startApp(t, {
    clock,
    env: {
      DEVICE_POLL_INTERVAL: '0',
      ADMIN_EMAILS: adminEmail,
      REPLICATE_API_TOKEN: TOKEN,
      REPLICATE_BASE_URL: replicate.url,
      GENERATION_POLL_BASE_MS: '50',
      GENERATION_TICK_MS: '50',
    },
  })
  const admin = await signUpAdmin(svc, adminEmail)
  const { client } = makeClient(svc.url)
  const user = await signUp(client, uniqueEmail('sched-prompt'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token: user.token, ...opts })
  const dev = await pairDevice(svc, user.token, { palette: 'bw', width: 400, height: 300 })
  const c = await connect(mqttUrl(svc), { clientId: dev.clientId, username: dev.deviceId, password: dev.password, clean: false })
  t.teardown(() => close(c))
  const images: string[] = []
  c.on('message', (topic, payload) => {
    if (topic.endsWith('/image')) images.push(JSON.parse(payload.toString()).imageId)
  })
  await subscribe(c, `devices/${dev.deviceId}/+`)

  const prompt = await call('/api/prompts', { body: { text: 'a lighthouse at dusk' } })
  t.equal(prompt.status, 201)
  const p = await call('/api/playlists', {
    body: {
      name: 'Morning',
      mode: 'sequential',
      itemSeconds: 600,
      items: [{ kind: 'prompt', promptId: prompt.body.id, model: 'flux-schnell' }],
    },
  })
  t.equal(p.status, 201)
  t.match(p.body.items[0], { kind: 'prompt', promptId: prompt.body.id, model: 'flux-schnell' })
  const put = await call(`/api/device/${dev.deviceId}/schedule`, {
    method: 'PUT',
    body: { timeZone: 'UTC', rules: [{ playlistId: p.body.id, days: ['mon'], from: '08:00', to: '09:00' }], sleep: [] },
  })
  t.equal(put.status, 200)

  // 08:00 with a balance of 0: skipped, said in an event, nothing reaches the provider.
  now = Date.parse('2026-06-01T08:00:00Z')
  await svc.app.scheduler!.tick()
  const events = async () =>
    (await call(`/api/device/${dev.deviceId}/events?limit=100`)).body.events as Array<{ type: string; data: Record<string, unknown> }>
  const skipped = (await events()).filter((e) => e.type === 'schedule.skipped')
  t.equal(skipped.length, 1, 'one skipped turn')
  t.match(skipped[0]!.data, { reason: 'INSUFFICIENT_BALANCE', playlistId: p.body.id, kind: 'prompt', message: /costs 1.00 credits/ })
  t.equal(replicate.seen.created, 0, 'nothing reached the provider')
  t.match((await call(`/api/device/${dev.deviceId}/schedule`)).body.lastTurn, { skipped: 'INSUFFICIENT_BALANCE' })

  // With credits, the next turn is a paid job whose image the device gets.
  t.equal((await creditUser(svc, admin.token, user.userId, '2.50')).status, 200)
  now = Date.parse('2026-06-01T08:10:00Z')
  await svc.app.scheduler!.tick()
  await eventually(async () => images.length === 1, 20_000)
  t.equal(replicate.seen.created, 1, 'one prediction')
  t.equal((await call('/api/credits')).body.balance, '1.50', 'charged the model’s price')
  const jobs = (await events()).filter((e) => e.type === 'device.image')
  t.equal(jobs.length, 1)
  t.ok(jobs[0]!.data.jobId, 'the image came from a generation job')
})
