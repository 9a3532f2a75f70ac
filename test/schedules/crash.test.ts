// The scheduler across kill -9 of the service: frames keep turning. The kill lands where it hurts
// most, with every frame's next turn claimed (the claims are written as the killed run's, as a
// kill in the middle of a batch leaves them, an hour long); the restarted service lets go of them
// at start, and every frame gets its next picture within a few turns instead of after the lease.
import t from 'tap'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import mqtt, { type MqttClient } from 'mqtt'
import { freePort } from '../helpers/app.js'
import { childBacking, startServiceProcess } from '../helpers/child.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { eventually } from '../helpers/mqtt.js'
import { uploadPng } from '../helpers/uploads.js'
import { openDatabase, rowsOf } from '../../src/db/client.js'

const FRAMES = 3
const TURN_SECONDS = 2

function watch(url: string, dev: PairedDevice, pictures: string[]): Promise<MqttClient> {
  const client = mqtt.connect(url, { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, reconnectPeriod: 200 })
  client.on('connect', () => client.subscribe(dev.topics.image!, { qos: 1 }))
  client.on('message', (_topic, payload) => pictures.push((JSON.parse(payload.toString('utf8')) as { imageId: string }).imageId))
  return new Promise((resolve) => client.once('connect', () => resolve(client)))
}

t.test('a service killed with every turn claimed keeps its frames turning after the restart', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'dps-sched-crash-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const mqttPort = await freePort()
  const url = `http://127.0.0.1:${port}`
  const backing = await childBacking(t, dataDir)
  const env = {
    ...backing,
    DATA_DIR: dataDir,
    PORT: String(port),
    BASE_URL: url,
    MQTT_PORT: String(mqttPort),
    DEVICE_POLL_INTERVAL: '0',
    RATE_LIMIT_MAX: '100000',
    RATE_LIMIT_AUTH_MAX: '100000',
    SCHEDULE_MIN_SECONDS: String(TURN_SECONDS),
    SCHEDULE_TICK_MS: '200',
  }
  let service = startServiceProcess(t, env)
  await service.waitFor(/public URL/)

  const signUp = await fetch(`${url}/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ email: 'turns@example.com', password: 'correct-horse-battery', name: 'Turns' }),
  })
  const { token } = (await signUp.json()) as { token: string }
  const keys = [await uploadPng(url, token, 'white', 64, 48), await uploadPng(url, token, 'black', 64, 48)]
  const list = await jsonCall(url, '/api/playlists', {
    token,
    body: { name: 'Fast', mode: 'sequential', itemSeconds: TURN_SECONDS, items: keys.map((key) => ({ kind: 'upload', key })) },
  })
  t.equal(list.status, 201)
  const frames: Array<{ dev: PairedDevice; pictures: string[] }> = []
  const clients: MqttClient[] = []
  t.teardown(() => clients.forEach((c) => c.end(true)))
  for (let i = 0; i < FRAMES; i++) {
    const dev = await pairDevice({ url }, token, { name: `Frame ${i}`, palette: 'bw', width: 64, height: 48 })
    const pictures: string[] = []
    frames.push({ dev, pictures })
    clients.push(await watch(`mqtt://127.0.0.1:${mqttPort}`, dev, pictures))
    const put = await jsonCall(url, `/api/device/${dev.deviceId}/schedule`, {
      token,
      method: 'PUT',
      body: {
        timeZone: 'UTC',
        rules: [{ playlistId: list.body.id, days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from: '00:00', to: '24:00' }],
        sleep: [],
      },
    })
    t.equal(put.status, 200)
  }
  await eventually(async () => frames.every((f) => f.pictures.length >= 2), 30_000)
  t.pass('every frame turns')

  const node = (await readFile(join(dataDir, 'broker-id'), 'utf8')).trim()
  for (let round = 1; round <= 2; round++) {
    service.child.kill('SIGKILL')
    await service.closed
    // What a kill in the middle of a batch leaves: every schedule claimed by the killed run, long.
    const database = openDatabase({ databaseUrl: backing.DATABASE_URL, dataDir })
    const held = await database.db.execute(
      sql`update device_schedule set lease_owner = ${`${node}/killed-run-${round}`}, lease_until = now() + interval '1 hour', next_at = now() returning device_id`,
    )
    await database.close()
    t.equal(rowsOf(held).length, FRAMES, `round ${round}: every turn held by the killed run`)

    const before = frames.map((f) => f.pictures.length)
    service = startServiceProcess(t, env)
    await service.waitFor(/public URL/)
    // Well within the hour the claims were written for: a few turns and a reconnect.
    await eventually(async () => frames.every((f, i) => f.pictures.length >= before[i]! + 2), 30_000)
    t.pass(`round ${round}: every frame turned twice more after the restart`)
  }
})
