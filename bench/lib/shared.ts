// Resources several scenarios share within one run, so the service starts (and 1,000 devices
// connect) once rather than per scenario: starting the app costs 10–20 s on a busy two-core box.
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { FLEET_TOPIC, topicFor } from '../../src/mqtt/contract.js'
import type { Context } from './context.js'
import { startFleet, type ConnectResult, type Fleet } from './fleet.js'
import { connectService, startMosquitto, writeMosquittoAuth, type Mosquitto } from './mosquitto.js'
import { makeCreds, startOurs, writeCreds, type Cred, type Ours } from './ours.js'

/** Settings every scenario on the shared server can live with: no pairing poll delay, an instant local provider with tight polling. */
export const OURS_BENCH_ENV = {
  DEVICE_POLL_INTERVAL: '0',
  LOCAL_PROVIDER_DURATION_MS: '0',
  GENERATION_TICK_MS: '10',
  GENERATION_POLL_BASE_MS: '10',
  GENERATION_POLL_MAX_MS: '10',
}

/** Our service on the embedded defaults (PGlite, in-process broker). */
export function sharedOurs(ctx: Context): Promise<Ours> {
  return ctx.shared(
    'ours',
    async () => {
      ctx.log('starting our service (embedded defaults)')
      return startOurs({ dataDir: mkdtempSync(join(ctx.workDir, 'ours-')), env: OURS_BENCH_ENV })
    },
    (o) => o.stop({ graceful: Boolean(process.env.BENCH_CPU_PROF) }),
  )
}

export async function waitForEvents(ours: Ours, type: string, since: number, n: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const got = await ours.call<number>('countEvents', { type, since })
    if (got >= n || Date.now() > deadline) return got
    await new Promise((r) => setTimeout(r, 200))
  }
}

export type Rig = {
  devices: number
  creds: Cred[]
  ours: Ours
  mosquitto: Mosquitto
  fleetOurs: Fleet
  fleetPeer: Fleet
  /** The service's mqtt.js client on Mosquitto. */
  service: MqttClient
  connect: { ours: ConnectResult; peer: ConnectResult; oursEventsMs: number }
}

/**
 * 1,000 devices (250 with --quick) with persistent sessions (clean=false), each subscribed with QoS 1 to its own
 * devices/{id}/cmd and to fleet/cmd, on our service and, separately, on Mosquitto.
 */
export function sharedRig(ctx: Context): Promise<Rig> {
  return ctx.shared(
    'rig',
    async () => {
      // --quick: fewer devices, since every connect of ours is also stored (PGlite, ~50–100/s here).
      const devices = ctx.quick ? 250 : 1000
      const ours = await sharedOurs(ctx)
      const dir = mkdtempSync(join(ctx.workDir, 'rig-'))
      const creds = makeCreds(devices)
      ctx.log(`rig: seeding ${devices} devices, starting Mosquitto and two device fleets`)
      await ours.call('seed', { file: writeCreds(dir, 'creds', creds) }, 300_000)
      const mosquitto = await startMosquitto(dir, writeMosquittoAuth(dir, creds))
      const fleetOurs = await startFleet()
      const fleetPeer = await startFleet()
      const since = Date.now() - 1000
      // {id} is filled in per device by the fleet worker.
      const topics = [topicFor('{id}', 'cmd'), FLEET_TOPIC]
      const co = await fleetOurs.connect({ port: ours.mqttPort, creds, clean: false, subscribe: topics, concurrency: 100 })
      const stored = await waitForEvents(ours, 'device.connected', since, devices, 120_000)
      const oursEventsMs = Date.now() - co.start
      const cp = await fleetPeer.connect({ port: mosquitto.port, creds, clean: false, subscribe: topics, concurrency: 100 })
      if (co.failed || cp.failed || stored < devices)
        throw new Error(`rig: connect failures: ours ${JSON.stringify(co.codes)} (${stored} events), peer ${JSON.stringify(cp.codes)}`)
      const service = await connectService(mosquitto.port)
      ctx.log(
        `rig: ${devices} devices connected and subscribed on each broker (ours ${Math.round(co.end - co.start)} ms, events stored after ${oursEventsMs} ms; Mosquitto ${Math.round(cp.end - cp.start)} ms)`,
      )
      return { devices, creds, ours, mosquitto, fleetOurs, fleetPeer, service, connect: { ours: co, peer: cp, oursEventsMs } }
    },
    async (rig) => {
      const since = Date.now() - 1000
      await rig.service.endAsync().catch(() => {})
      await rig.fleetOurs.disconnect(true).catch(() => {})
      await rig.fleetPeer.disconnect(true).catch(() => {})
      // The disconnect events are written before the next scenario uses the same service.
      await waitForEvents(rig.ours, 'device.disconnected', since, rig.devices, 60_000)
      await rig.fleetOurs.stop()
      await rig.fleetPeer.stop()
      await rig.mosquitto.stop()
    },
  )
}
