// pairing: complete pairings per second, each one the whole flow a device and its owner go through.
//   ours: POST /api/device/init → POST /api/device/validate (owner, with the PIN) → POST
//         /api/device/get-init-device until it carries MQTT credentials → MQTT CONNECT with them.
//   peer: Better Auth's device-authorization plugin (RFC 8628, bench/servers/peer-device-auth.ts):
//         POST /device/code → GET /device?user_code (owner claims it) → POST /device/approve →
//         POST /device/token until it answers a token → MQTT CONNECT to Mosquitto. Mosquitto cannot
//         learn the new token without an auth plugin, so the device connects with credentials
//         provisioned in its password file beforehand: the connect costs the same, the credential
//         issuing that ours does (a device row and secret the broker then accepts) has no
//         counterpart there.
// Both on PGlite, polling without delay, a fixed number of pairings with a few in flight.
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startChild } from '../lib/child.js'
import type { Child } from '../lib/child.js'
import { alternate, type Context, type Scenario } from '../lib/context.js'
import { mosquittoVersion, startMosquitto, writeMosquittoAuth, type Mosquitto } from '../lib/mosquitto.js'
import { makeCreds, type Cred } from '../lib/ours.js'
import { freePort } from '../lib/ports.js'
import { cpuSeconds } from '../lib/proc.js'
import { bounded, RawDevice } from '../lib/raw-mqtt.js'
import type { Metric } from '../lib/report.js'
import { sharedOurs } from '../lib/shared.js'
import { DEFAULT_DISPLAY } from '../../src/images/profiles.js'

const PEER = fileURLToPath(new URL('../servers/peer-device-auth.ts', import.meta.url))
const MAX_POLLS = 50

async function post(url: string, body: unknown, token?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  })
  return { status: res.status, json: (await res.json().catch(() => ({}))) as Record<string, unknown> }
}

async function mqttConnect(port: number, clientId: string, username: string, password: string) {
  const d = new RawDevice({ host: '127.0.0.1', port, clientId, username, password, clean: false, keepalive: 600, timeoutMs: 30_000 })
  const code = await d.connect()
  await d.disconnect()
  if (code !== 0) throw new Error(`CONNACK ${code} for ${username}`)
}

async function pairOurs(url: string, mqttPort: number, token: string): Promise<void> {
  const init = await post(`${url}/api/device/init`, { display: DEFAULT_DISPLAY, model: 'bench-frame', firmware: '1.0.0' })
  if (init.status !== 200 && init.status !== 201) throw new Error(`init ${init.status} ${JSON.stringify(init.json)}`)
  const v = await post(`${url}/api/device/validate`, { pinCode: init.json.pinCode, name: 'Bench frame' }, token)
  if (v.status >= 300) throw new Error(`validate ${v.status} ${JSON.stringify(v.json)}`)
  for (let i = 0; i < MAX_POLLS; i++) {
    const rec = await post(`${url}/api/device/get-init-device`, { deviceId: init.json.deviceId, deviceCode: init.json.deviceCode })
    const creds = rec.json.credentials as { username: string; password: string; clientId: string } | undefined
    if (creds) return mqttConnect(mqttPort, creds.clientId, creds.username, creds.password)
    if (rec.status >= 400) throw new Error(`get-init-device ${rec.status} ${JSON.stringify(rec.json)}`)
  }
  throw new Error('no credentials after polling')
}

async function pairPeer(url: string, mqttPort: number, token: string, cred: Cred): Promise<void> {
  const code = await post(`${url}/api/auth/device/code`, { client_id: 'bench-frame' })
  if (code.status !== 200) throw new Error(`device/code ${code.status} ${JSON.stringify(code.json)}`)
  const userCode = code.json.user_code as string
  const verify = await fetch(`${url}/api/auth/device?user_code=${encodeURIComponent(userCode)}`, {
    headers: { authorization: `Bearer ${token}` },
  })
  await verify.arrayBuffer()
  if (verify.status !== 200) throw new Error(`device verify ${verify.status}`)
  const approve = await post(`${url}/api/auth/device/approve`, { userCode }, token)
  if (approve.status !== 200) throw new Error(`device/approve ${approve.status} ${JSON.stringify(approve.json)}`)
  for (let i = 0; i < MAX_POLLS; i++) {
    const t = await post(`${url}/api/auth/device/token`, {
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      device_code: code.json.device_code,
      client_id: 'bench-frame',
    })
    if (t.status === 200 && t.json.access_token) return mqttConnect(mqttPort, cred.id, cred.id, cred.secret)
    if (t.json.error !== 'authorization_pending' && t.json.error !== 'slow_down')
      throw new Error(`device/token ${t.status} ${JSON.stringify(t.json)}`)
  }
  throw new Error('no token after polling')
}

type Peer = { child: Child; url: string; mosquitto: Mosquitto; pool: Cred[] }

/** The peer's Better Auth server and Mosquitto, started early (prepare) so their start overlaps other scenarios. */
function peerServers(ctx: Context): Promise<Peer> {
  return ctx.shared(
    'pairing-peer',
    async () => {
      const dir = mkdtempSync(join(ctx.workDir, 'pairing-'))
      const pool = makeCreds(PER_ROUND(ctx) * (ROUNDS(ctx) + 1))
      const mosquitto = await startMosquitto(dir, writeMosquittoAuth(dir, pool), 'pairing')
      const port = await freePort()
      const child = await startChild(PEER, { env: { ...process.env, DATA_DIR: join(dir, 'peer'), PORT: String(port) } })
      return { child, url: `http://127.0.0.1:${port}`, mosquitto, pool }
    },
    async (p) => {
      await p.child.stop({ graceful: true })
      await p.mosquitto.stop()
    },
  )
}

const PER_ROUND = (ctx: Context) => (ctx.quick ? 10 : 60)
const ROUNDS = (ctx: Context) => (ctx.quick ? 2 : 3)

export const pairing: Scenario = {
  name: 'pairing',
  summary:
    'complete pairings per second (init, validate, poll until credentials, first MQTT connect) vs Better Auth device authorization + Mosquitto',
  uses: ['ours', 'pairing-peer'],
  prepare: (ctx) => peerServers(ctx),
  async run(ctx) {
    const perRound = PER_ROUND(ctx)
    const concurrency = 5
    const rounds = ROUNDS(ctx)
    const ours = await sharedOurs(ctx)
    const { token } = await ours.call<{ token: string }>('session')
    const { child: peer, url: peerUrl, mosquitto, pool } = await peerServers(ctx)
    const { token: peerToken } = await peer.call<{ token: string }>('session')
    let used = 0
    // One warm-up pairing each.
    await pairOurs(ours.url, ours.mqttPort, token)
    await pairPeer(peerUrl, mosquitto.port, peerToken, pool[used++]!)

    const m = {
      rate: { name: 'pairings/s', better: 'higher', ours: [], peer: [] } as Metric,
      cpu: { name: 'server CPU ms/pairing', better: 'lower', ours: [], peer: [] } as Metric,
    }
    const raw: Array<Record<string, unknown>> = []
    const one = async (side: 'ours' | 'peer', round: number) => {
      const pids = side === 'ours' ? [ours.pid] : [peer.pid, mosquitto.pid]
      const cpu0 = pids.map(cpuSeconds)
      const t0 = performance.now()
      const jobs = Array.from({ length: perRound }, () => (side === 'peer' ? pool[used++]! : null))
      await bounded(jobs, concurrency, (cred) =>
        side === 'ours' ? pairOurs(ours.url, ours.mqttPort, token) : pairPeer(peerUrl, mosquitto.port, peerToken, cred!),
      )
      const seconds = (performance.now() - t0) / 1000
      const cpu = pids.reduce((sum, p, i) => sum + cpuSeconds(p) - cpu0[i]!, 0)
      m.rate[side].push(perRound / seconds)
      m.cpu[side].push((cpu / perRound) * 1000)
      raw.push({ side, round, seconds, cpu })
      ctx.log(
        `pairing ${side} round ${round + 1}: ${(perRound / seconds).toFixed(1)} pairings/s, ${((cpu / perRound) * 1000).toFixed(1)} ms CPU each`,
      )
    }
    await alternate(
      rounds,
      (r) => one('ours', r),
      (r) => one('peer', r),
    )
    return {
      scenario: 'pairing',
      ours: 'our pairing (PGlite) + our broker',
      peer: `Better Auth device authorization (PGlite) + Mosquitto ${mosquittoVersion()}`,
      rounds,
      metrics: [m.rate, m.cpu],
      notes: [
        `${perRound} complete pairings per round, ${concurrency} in flight, no poll interval on either side; the owner is signed in once beforehand (Bearer session token).`,
        'Ours: init → validate (PIN) → get-init-device until credentials → MQTT CONNECT with the issued secret (the connect also stores presence). Peer: device/code → GET /device (owner claims the code) → device/approve → device/token until a token → MQTT CONNECT to Mosquitto with a pre-provisioned password (Mosquitto cannot accept the new token without a plugin).',
        "Server CPU: ours = the app's process; peer = the Better Auth server's process plus Mosquitto's.",
      ],
      details: { perRound, concurrency, raw },
    }
  },
}
