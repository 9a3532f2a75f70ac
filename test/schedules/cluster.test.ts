// Two instances of the service on one PostgreSQL (and Redis), one schedule table: each looks for
// due turns at the same moments, and every turn still fires exactly once.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshPostgres, startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { postgresUrl, redisUrl } from '../helpers/services.js'
import { uploadPng } from '../helpers/uploads.js'

const redis = await redisUrl()
const postgres = await postgresUrl()
const skip = !redis ? 'no Redis reachable (set REDIS_URL)' : !postgres ? 'no PostgreSQL reachable (set DATABASE_URL)' : false

const DEVICES = 12
const TURNS = 4

t.test('two instances racing for the same due turns fire each once', { skip }, async (t) => {
  let now = Date.parse('2026-06-01T07:59:00Z')
  const clock = () => new Date(now)
  const dataDir = await mkdtemp(join(tmpdir(), 'dps-sched-cluster-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const env = {
    REDIS_URL: redis as string,
    REDIS_PREFIX: `test:${randomBytes(6).toString('hex')}:`,
    DATABASE_URL: await freshPostgres(t, postgres as string),
    AUTH_SECRET: randomBytes(32).toString('base64url'),
    DEVICE_POLL_INTERVAL: '0',
    // Only the test's ticks look for due turns.
    SCHEDULE_TICK_MS: '60000',
    // Few per claim, so the two instances' claims interleave.
    SCHEDULE_BATCH: '2',
  }
  const reuse = { dataDir, databaseUrl: env.DATABASE_URL, redisPrefix: env.REDIS_PREFIX }
  const a = await startApp(t, { clock, env, reuse })
  const b = await startApp(t, { clock, env, reuse })
  const { client } = makeClient(a.url)
  const { token } = await signUp(client, uniqueEmail('sched-cluster'))
  const key = await uploadPng(a.url, token, 'gray', 64, 48)
  const list = (
    await jsonCall(a.url, '/api/playlists', {
      token,
      body: {
        name: 'Shared',
        mode: 'shuffle',
        itemSeconds: 600,
        items: [
          { kind: 'upload', key },
          { kind: 'upload', key },
        ],
      },
    })
  ).body
  const devices: string[] = []
  for (let i = 0; i < DEVICES; i++) {
    const dev = await pairDevice(a, token, { name: `Frame ${i}`, palette: 'bw', width: 200, height: 150 })
    devices.push(dev.deviceId)
    // Plans saved through either instance.
    const put = await jsonCall(i % 2 ? a.url : b.url, `/api/device/${dev.deviceId}/schedule`, {
      token,
      method: 'PUT',
      body: { timeZone: 'UTC', rules: [{ playlistId: list.id, days: ['mon'], from: '08:00', to: '12:00' }], sleep: [] },
    })
    t.equal(put.status, 200)
  }
  // Each save made its plan due at once (idle until 08:00): looked at before the turns start.
  await Promise.all([a.app.scheduler!.tick(), b.app.scheduler!.tick()])
  // Four turns, each looked for by both instances at once.
  const fired: number[][] = []
  for (let turn = 0; turn < TURNS; turn++) {
    now = Date.parse('2026-06-01T08:00:00Z') + turn * 600_000
    fired.push(await Promise.all([a.app.scheduler!.tick(), b.app.scheduler!.tick()]))
  }
  for (const [turn, counts] of fired.entries())
    t.equal(counts[0]! + counts[1]!, DEVICES, `turn ${turn}: ${DEVICES} fired in all (${counts.join(' + ')})`)
  t.ok(
    fired.some(([x, y]) => x! > 0 && y! > 0),
    'both instances fired turns',
  )
  for (const id of devices) {
    const events = (await jsonCall(a.url, `/api/device/${id}/events?limit=100`, { token })).body.events as Array<{
      type: string
      data: { scheduled?: unknown }
    }>
    const sent = events.filter((e) => e.type === 'device.image' && e.data.scheduled).length
    if (sent !== TURNS) t.fail(`device ${id}: ${sent} scheduled images, expected ${TURNS}`)
  }
  t.pass(`every device got exactly ${TURNS} scheduled images`)
})
