// delivery: a generation request with the local provider → the converted image's bytes on a
// connected device, one job at a time, p50/p99.
//   ours: POST /api/generate for a paired 800×480 1-bit device (LOCAL_PROVIDER_DURATION_MS=0, a
//         10 ms runner tick and poll) → the job row, the provider start and poll, storing the
//         original and its display variants, the device.image event, the MQTT message on
//         devices/{id}/image → the device downloads the URL in it and checks its SHA-256.
//   peer: the minimal script a developer might write instead: draw the same image with the same
//         local provider code, convert it with sharp's palette pipeline (the display peer), publish
//         the bytes with QoS 1 through Mosquitto to the subscribed device. No job record, no
//         storage, no retries, no event log, no URL.
// The ratio is therefore the price of the bookkeeping that makes ours durable and observable.
import { createHash } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import sharp from 'sharp'
import { renderLocalImage } from '../../src/generation/local-image/render.js'
import { seedFor } from '../../src/generation/providers/local.js'
import { topicFor } from '../../src/mqtt/contract.js'
import { generationSize } from '../../src/prompts/service.js'
import { alternate, type Scenario } from '../lib/context.js'
import { mosquittoVersion, SERVICE_PASSWORD, SERVICE_USER, startMosquitto, writeMosquittoAuth } from '../lib/mosquitto.js'
import { makeCreds, writeCreds } from '../lib/ours.js'
import { cpuSeconds, selfCpuSeconds } from '../lib/proc.js'
import type { Metric } from '../lib/report.js'
import { sharedOurs } from '../lib/shared.js'
import { DEFAULT_DISPLAY } from '../../src/images/profiles.js'

const DISPLAY = DEFAULT_DISPLAY
const WHITE = { r: 255, g: 255, b: 255, alpha: 1 }

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

function nextPayload(client: MqttClient, topic: string, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('message', on)
      reject(new Error(`nothing on ${topic} within ${timeoutMs} ms`))
    }, timeoutMs)
    function on(t: string, payload: Buffer) {
      if (t !== topic) return
      clearTimeout(timer)
      client.off('message', on)
      resolve(payload)
    }
    client.on('message', on)
  })
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!
}

export const delivery: Scenario = {
  name: 'delivery',
  summary: 'local-provider generation → image bytes on a connected device, p50/p99, vs render + sharp + Mosquitto publish',
  uses: ['ours'],
  prepare: sharedOurs,
  async run(ctx) {
    const perRound = ctx.quick ? 4 : 15
    const rounds = ctx.quick ? 2 : 3
    const ours = await sharedOurs(ctx)
    const { token } = await ours.call<{ token: string }>('session')
    const dir = mkdtempSync(join(ctx.workDir, 'delivery-'))
    const [cred] = makeCreds(1)
    await ours.call('seed', { file: writeCreds(dir, 'creds', [cred!]) })
    const mosquitto = await startMosquitto(dir, writeMosquittoAuth(dir, [cred!]), 'delivery')
    const opts = {
      clientId: cred!.id,
      username: cred!.id,
      password: cred!.secret,
      clean: false,
      reconnectPeriod: 0,
      protocolVersion: 4 as const,
    }
    const topic = topicFor(cred!.id, 'image')
    const devOurs = await mqtt.connectAsync(`mqtt://127.0.0.1:${ours.mqttPort}`, opts)
    const devPeer = await mqtt.connectAsync(`mqtt://127.0.0.1:${mosquitto.port}`, opts)
    const service = await mqtt.connectAsync(`mqtt://127.0.0.1:${mosquitto.port}`, {
      clientId: SERVICE_USER,
      username: SERVICE_USER,
      password: SERVICE_PASSWORD,
      reconnectPeriod: 0,
      protocolVersion: 4,
    })
    const size = generationSize({ display: DISPLAY } as Parameters<typeof generationSize>[0])
    try {
      await devOurs.subscribeAsync(topic, { qos: 1 })
      await devPeer.subscribeAsync(topic, { qos: 1 })
      let n = 0

      const viaOurs = async () => {
        const text = `a quiet harbour at dawn, take ${n++}`
        const got = nextPayload(devOurs, topic, 60_000)
        const res = await fetch(`${ours.url}/api/generate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ prompt: { text }, deviceId: cred!.id, model: 'local' }),
        })
        if (res.status !== 202) throw new Error(`generate ${res.status} ${await res.text()}`)
        await res.arrayBuffer()
        const msg = JSON.parse((await got).toString('utf8')) as { url: string; sha256: string; bytes: number }
        const img = Buffer.from(await (await fetch(msg.url)).arrayBuffer())
        if (sha256(img) !== msg.sha256 || img.length !== msg.bytes) throw new Error('image bytes do not match the message')
      }

      const viaPeer = async () => {
        const text = `a quiet harbour at dawn, take ${n++}`
        const got = nextPayload(devPeer, topic, 60_000)
        const original = await renderLocalImage({ prompt: text, width: size.width, height: size.height, seed: seedFor(`${text}\n`) })
        const converted = await sharp(original)
          .resize(DISPLAY.width, DISPLAY.height, { fit: 'cover', background: WHITE })
          .flatten({ background: WHITE })
          .png({ palette: true, colours: 2, dither: 1.0 })
          .toBuffer()
        await service.publishAsync(topic, converted, { qos: 1 })
        const bytes = await got
        if (!bytes.equals(converted)) throw new Error('peer bytes differ')
      }

      // Warm-up: one each.
      await viaOurs()
      await viaPeer()
      const m = {
        p50: { name: 'latency p50 ms', better: 'lower', ours: [], peer: [] } as Metric,
        p99: { name: 'latency p99 ms', better: 'lower', ours: [], peer: [] } as Metric,
        cpu: { name: 'CPU ms/image', better: 'lower', ours: [], peer: [] } as Metric,
      }
      const raw: Array<Record<string, unknown>> = []
      const one = async (side: 'ours' | 'peer', round: number) => {
        const times: number[] = []
        const cpu0 = side === 'ours' ? cpuSeconds(ours.pid) : cpuSeconds(mosquitto.pid) + selfCpuSeconds()
        for (let i = 0; i < perRound; i++) {
          const t0 = performance.now()
          await (side === 'ours' ? viaOurs() : viaPeer())
          times.push(performance.now() - t0)
        }
        const cpu = (side === 'ours' ? cpuSeconds(ours.pid) : cpuSeconds(mosquitto.pid) + selfCpuSeconds()) - cpu0
        m.p50[side].push(pct(times, 0.5))
        m.p99[side].push(pct(times, 0.99))
        m.cpu[side].push((cpu / perRound) * 1000)
        raw.push({ side, round, times, cpu })
        ctx.log(`delivery ${side} round ${round + 1}: p50 ${pct(times, 0.5).toFixed(0)} ms, p99 ${pct(times, 0.99).toFixed(0)} ms`)
      }
      await alternate(
        rounds,
        (r) => one('ours', r),
        (r) => one('peer', r),
      )
      return {
        scenario: 'delivery',
        ours: 'POST /api/generate → device has the image',
        peer: `render + sharp palette PNG + Mosquitto ${mosquittoVersion()} publish`,
        rounds,
        metrics: [m.p50, m.p99, m.cpu],
        notes: [
          `${perRound} images per round, one at a time, for an ${DISPLAY.width}×${DISPLAY.height} 1-bit device (generated at ${size.width}×${size.height}).`,
          'Ours: from the POST to the device having downloaded the URL from its MQTT message and checked the SHA-256 (job row, runner tick and poll every 10 ms, provider render, original + display variants stored, event, MQTT message, HTTP download). Peer: render with the same local-provider code, sharp palette PNG, publish the bytes (QoS 1) through Mosquitto.',
          "CPU: ours = the app's process; peer = the benchmark process (render, conversion, publisher and, unavoidably, the device client) plus Mosquitto's.",
        ],
        details: { perRound, size, raw },
      }
    } finally {
      await Promise.all([devOurs.endAsync(), devPeer.endAsync(), service.endAsync()]).catch(() => {})
      await mosquitto.stop()
    }
  },
}
