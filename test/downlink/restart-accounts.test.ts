// Messages queued for several accounts' sleeping frames across a restart of the service: each frame
// gets every message meant for it, in order, and nothing else. With Redis the broker's stored
// sessions outlive the process; packets stored by the old process must never be replaced by the
// new one's (they were: aedes numbers packets from 1 in each process, and aedes-persistence-redis
// keyed them by broker id and number, so a restarted node with a fixed id overwrote them and a
// waking frame was handed another account's prompts).
import t from 'tap'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { freePort } from '../helpers/app.js'
import { childBacking, startServiceProcess } from '../helpers/child.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { close, eventually } from '../helpers/mqtt.js'
import { online, stopName, type Delivered } from '../helpers/restart.js'

const FRAMES_PER_ACCOUNT = 2
const QUEUED_BEFORE = 5
/** More publishes than the first process made in all (pairing, presence, configs, the queued prompts): its packet numbers are all reused. */
const POSTED_AFTER = 120

async function signUp(url: string, who: string): Promise<Record<string, string>> {
  const res = await fetch(`${url}/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ email: `${who}@example.com`, password: 'correct-horse-battery', name: who }),
  })
  if (res.status !== 200) throw new Error(`sign-up ${who}: ${res.status}`)
  const { token } = (await res.json()) as { token: string }
  return { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
}

async function postPrompt(url: string, auth: Record<string, string>, deviceId: string, text: string): Promise<string> {
  const res = await fetch(`${url}/api/prompts`, { method: 'POST', headers: auth, body: JSON.stringify({ text, deviceId }) })
  if (res.status !== 201) throw new Error(`prompt: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { id: string }).id
}

for (const stop of ['SIGTERM', 'SIGKILL'] as const) {
  t.test(`after a ${stopName(stop)}, each account's sleeping frames get their own messages and no one else's`, async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'dps-accounts-'))
    t.teardown(() => rm(dataDir, { recursive: true, force: true }))
    const port = await freePort()
    const mqttPort = await freePort()
    const url = `http://127.0.0.1:${port}`
    const env = {
      ...(await childBacking(t)),
      DATA_DIR: dataDir,
      PORT: String(port),
      BASE_URL: url,
      MQTT_PORT: String(mqttPort),
      DEVICE_POLL_INTERVAL: '0',
      RATE_LIMIT_MAX: '100000',
      RATE_LIMIT_AUTH_MAX: '100000',
      MQTT_CONNECT_RATE: '1000',
    }
    const first = startServiceProcess(t, env)
    await first.waitFor(/public URL/)

    const accounts = { alice: await signUp(url, 'alice'), bob: await signUp(url, 'bob') }
    const frames: Array<{ owner: keyof typeof accounts; dev: PairedDevice }> = []
    for (const owner of ['bob', 'alice'] as const)
      for (let i = 0; i < FRAMES_PER_ACCOUNT; i++)
        frames.push({ owner, dev: await pairDevice({ url }, accounts[owner].authorization!.slice(7), { name: `${owner} ${i}` }) })
    // Each frame holds a persistent session once, then sleeps.
    for (const { dev } of frames) await close((await online(dev, mqttPort)).client)

    const sent = new Map<string, string[]>()
    const owned = new Map<string, string>()
    const queue = async (frame: (typeof frames)[number], text: string) => {
      const id = await postPrompt(url, accounts[frame.owner], frame.dev.deviceId, text)
      sent.set(frame.dev.deviceId, [...(sent.get(frame.dev.deviceId) ?? []), id])
      owned.set(id, frame.dev.deviceId)
    }
    for (let n = 0; n < QUEUED_BEFORE; n++) for (const frame of frames) await queue(frame, `${frame.owner} before ${n}`)

    first.child.kill(stop)
    await first.closed
    const second = startServiceProcess(t, env)
    await second.waitFor(/public URL/)

    // Alice sends many more to her sleeping frames after the restart (each frame's in order).
    await Promise.all(
      frames
        .filter((f) => f.owner === 'alice')
        .map(async (frame, i, all) => {
          for (let n = 0; n < POSTED_AFTER / all.length; n++) await queue(frame, `alice after ${i}.${n}`)
        }),
    )

    const received = new Map<string, Delivered[]>()
    const clients: MqttClient[] = []
    t.teardown(() => Promise.all(clients.map((c) => close(c))))
    for (const { dev } of frames) {
      const got: Delivered[] = []
      received.set(dev.deviceId, got)
      clients.push((await online(dev, mqttPort, got)).client)
    }
    await eventually(
      async () =>
        frames.every(({ dev }) => new Set(received.get(dev.deviceId)!.map((r) => r.promptId)).size >= sent.get(dev.deviceId)!.length),
      60_000,
    ).catch(() => {})

    for (const { owner, dev } of frames) {
      const got = received.get(dev.deviceId)!
      const foreign = got.filter(
        (r) => !r.topic.startsWith(`devices/${dev.deviceId}/`) || (r.promptId && owned.get(r.promptId) !== dev.deviceId),
      )
      t.same(
        foreign.map((r) => r.topic),
        [],
        `${owner}'s frame ${dev.deviceId.slice(0, 8)} received nothing meant for another frame`,
      )
      const ids = got.filter((r) => r.topic.endsWith('/prompt')).map((r) => r.promptId)
      t.same(
        [...new Set(ids)],
        sent.get(dev.deviceId),
        `${owner}'s frame got all ${sent.get(dev.deviceId)!.length} of its prompts, in order`,
      )
    }
  })
}
