// fan-out and broadcast: 1,000 connected devices with persistent sessions (clean=false) and QoS 1
// subscriptions. fan-out sends 20 messages of 200 bytes to each device's own topic; broadcast
// sends 100 messages to one shared topic every device subscribes to (fleet/cmd).
//
// Ours: the real app in its own process (device authentication, ACL and presence on), publishing
// through app.deviceLink.publish (fan-out) or the broker's publish on fleet/cmd (broadcast).
// Peer: Mosquitto with a password file and an ACL for the same devices; the service publishes
// through an mqtt.js client. Devices are raw MQTT sockets in a separate load-generator process.
// Both sides bound the publishes in flight to the same number.
import type { MqttClient } from 'mqtt'
import { FLEET_TOPIC, topicFor } from '../../src/mqtt/contract.js'
import { alternate, timedBody, type Context, type Scenario } from '../lib/context.js'
import { mosquittoVersion } from '../lib/mosquitto.js'
import { sharedRig } from '../lib/shared.js'
import { cpuSeconds, selfCpuSeconds } from '../lib/proc.js'
import type { Metric, ScenarioResult } from '../lib/report.js'

type Mode = 'fan-out' | 'broadcast' | 'outbox'

export const BYTES = 200
/** Sequence numbers never repeat within a run, so a late duplicate cannot count in a later round. */
let nextSeq = 0

/** QoS 1 publishes through an mqtt.js client, at most `inflight` unacknowledged. */
export function publishAll(client: MqttClient, jobs: Array<[topic: string, seq: number]>, inflight: number): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < jobs.length) {
      const [topic, seq] = jobs[next++]!
      await new Promise<void>((resolve, reject) =>
        client.publish(topic, JSON.stringify(timedBody(seq, BYTES)), { qos: 1 }, (err) => (err ? reject(err) : resolve())),
      )
    }
  }
  return Promise.all(Array.from({ length: inflight }, lane)).then(() => {})
}

async function run(mode: Mode, ctx: Context): Promise<ScenarioResult> {
  const perDevice = mode !== 'broadcast'
  const messages = perDevice ? 20 : ctx.quick ? 40 : 100
  // A broadcast round moves 100,000 messages: two rounds each keep the whole run near 10 minutes.
  const rounds = ctx.quick || mode === 'broadcast' ? 2 : 3
  const inflight = perDevice ? 100 : 10
  const rig = await sharedRig(ctx)
  const devices = rig.devices
  const total = devices * messages
  const { ours, mosquitto: mosq, fleetOurs, fleetPeer, service } = rig
  const ids = rig.creds.map((c) => c.id)
  const m = {
    rate: { name: 'deliveries/s', better: 'higher', ours: [], peer: [] } as Metric,
    p50: { name: 'latency p50 ms', better: 'lower', ours: [], peer: [] } as Metric,
    p99: { name: 'latency p99 ms', better: 'lower', ours: [], peer: [] } as Metric,
    lost: { name: 'lost messages', better: 'lower', ours: [], peer: [] } as Metric,
    cpu: { name: 'service CPU µs/delivery', better: 'lower', ours: [], peer: [] } as Metric,
  }
  const raw: Array<Record<string, unknown>> = []
  const jobs: Array<[string, number]> = []
  for (let seq = 0; seq < messages; seq++) {
    if (mode === 'broadcast') jobs.push([FLEET_TOPIC, seq])
    else for (const id of ids) jobs.push([topicFor(id, 'cmd'), seq])
  }

  // outbox: both sides are our service; the peer publishes straight to its broker, past the outbox.
  const oursProcess = (side: 'ours' | 'peer') => side === 'ours' || mode === 'outbox'
  const measure = async (side: 'ours' | 'peer', round: number) => {
    const fleet = oursProcess(side) ? fleetOurs : fleetPeer
    await fleet.expect(total)
    const brokerPid = oursProcess(side) ? ours.pid : mosq.pid
    const b0 = cpuSeconds(brokerPid)
    const g0 = cpuSeconds(fleet.pid)
    const s0 = selfCpuSeconds()
    const t0 = performance.timeOrigin + performance.now()
    // Sequence numbers differ per round so a late duplicate cannot count for the next round.
    const base = nextSeq
    nextSeq += messages
    const shifted = jobs.map(([tp, s]) => [tp, s + base] as [string, number])
    if (oursProcess(side)) {
      if (perDevice)
        await ours.call('fanOut', { ids, count: messages, bytes: BYTES, inflight, seqBase: base, direct: side === 'peer' }, 300_000)
      else await ours.call('broadcast', { count: messages, bytes: BYTES, inflight, seqBase: base }, 300_000)
    } else {
      await publishAll(service, shifted, inflight)
    }
    const w = await fleet.wait(120_000)
    const brokerCpu = cpuSeconds(brokerPid) - b0
    const genCpu = cpuSeconds(fleet.pid) - g0
    const publisherCpu = oursProcess(side) ? 0 : selfCpuSeconds() - s0
    const seconds = (w.lastAt - t0) / 1000
    const serviceCpu = brokerCpu + publisherCpu
    m.rate[side].push(w.received / seconds)
    m.p50[side].push(w.p50)
    m.p99[side].push(w.p99)
    m.lost[side].push(total - w.received)
    m.cpu[side].push((serviceCpu / Math.max(1, w.received)) * 1e6)
    raw.push({
      side,
      round,
      received: w.received,
      duplicates: w.duplicates,
      seconds,
      brokerCpu,
      publisherCpu,
      generatorCpu: genCpu,
      p50: w.p50,
      p99: w.p99,
      max: w.max,
    })
    ctx.log(
      `${mode} ${side} round ${round + 1}: ${Math.round(w.received / seconds)} deliveries/s, p99 ${w.p99.toFixed(1)} ms, lost ${total - w.received}`,
    )
  }
  await alternate(
    rounds,
    (r) => measure('ours', r),
    (r) => measure('peer', r),
  )

  if (mode === 'outbox') {
    return {
      scenario: mode,
      ours: 'our service, durable downlink (each message numbered and stored before it is published, marked delivered on PUBACK)',
      peer: 'the same service process publishing straight to its broker (nothing stored)',
      rounds,
      metrics: [m.rate, m.p99, m.lost, m.cpu],
      notes: [
        `The fan-out workload (${devices} devices, persistent sessions, QoS 1, ${messages} messages of ${BYTES} bytes each, ${total.toLocaleString('en-US')} deliveries per round, at most ${inflight} in flight), twice on one service process on the embedded database (PGlite): through the outbox (app.deviceLink.publish) and past it (the broker's publish). The CPU difference per delivery is what the outbox costs.`,
      ],
      details: { devices, messages, bytes: BYTES, inflight, raw },
    }
  }
  return {
    scenario: mode,
    ours: 'our service (aedes, auth + ACL + presence)',
    peer: `Mosquitto ${mosquittoVersion()} (password file + ACL)`,
    rounds,
    metrics: [m.rate, m.p50, m.p99, m.lost, m.cpu],
    notes: [
      mode === 'fan-out'
        ? `${devices} devices, persistent sessions, QoS 1; ${messages} messages of ${BYTES} bytes to each device's own topic (${total.toLocaleString('en-US')} deliveries per round), at most ${inflight} publishes in flight.`
        : `${devices} devices subscribed to fleet/cmd with QoS 1; ${messages} messages of ${BYTES} bytes (${total.toLocaleString('en-US')} deliveries per round), at most ${inflight} publishes in flight.`,
      'deliveries/s: distinct messages received by the devices divided by the time from the first publish to the last delivery. Latency: from the timestamp in the payload to receipt in the device process.',
      "service CPU: ours = the app's process (broker and publisher in one); peer = Mosquitto's process plus the mqtt.js service publisher. Devices run in a separate load-generator process (raw MQTT sockets).",
      `Setup (not timed as a metric): the ${devices} devices connected and subscribed in ${(rig.connect.oursEventsMs / 1000).toFixed(1)} s on ours (PGlite, until every connect event was stored) and ${((rig.connect.peer.end - rig.connect.peer.start) / 1000).toFixed(1)} s on Mosquitto.`,
    ],
    details: { devices, messages, bytes: BYTES, inflight, setup: rig.connect, raw },
  }
}

export const fanOut: Scenario = {
  name: 'fan-out',
  summary: '1,000 devices, 20 × 200-byte QoS 1 messages each to its own topic',
  uses: ['ours', 'rig'],
  prepare: sharedRig,
  run: (ctx) => run('fan-out', ctx),
}
export const broadcast: Scenario = {
  name: 'broadcast',
  summary: '1,000 devices on one shared topic (fleet/cmd), 100 QoS 1 messages',
  uses: ['ours', 'rig'],
  prepare: sharedRig,
  run: (ctx) => run('broadcast', ctx),
}
export const outbox: Scenario = {
  name: 'outbox',
  summary: 'the fan-out workload through the durable downlink and straight to the broker: what the outbox costs per delivery',
  uses: ['ours', 'rig'],
  prepare: sharedRig,
  run: (ctx) => run('outbox', ctx),
}
