// fan-out-rabbitmq: the fan-out workload (each device's own topic, QoS 1, persistent sessions)
// three ways in one run, rounds alternating: devices on RabbitMQ's MQTT listener with our service
// in external mode as the control plane (auth hook, presence from the event exchange, the durable
// downlink, the publisher), devices on our embedded broker, and devices on Mosquitto. CPU counts
// every process that works for a delivery except the device fleet: on RabbitMQ our service and
// RabbitMQ's Erlang VM, embedded our service alone, on Mosquitto Mosquitto and the mqtt.js
// publisher.
import { topicFor } from '../../src/mqtt/contract.js'
import type { Context, Scenario } from '../lib/context.js'
import type { Fleet } from '../lib/fleet.js'
import { mosquittoVersion } from '../lib/mosquitto.js'
import { cpuSeconds, selfCpuSeconds } from '../lib/proc.js'
import { sharedRabbit } from '../lib/rabbitmq.js'
import type { Metric, ScenarioResult } from '../lib/report.js'
import { sharedRig } from '../lib/shared.js'
import { BYTES, publishAll } from './fan-out.js'

type Side = 'rabbitmq' | 'embedded' | 'mosquitto'
type Reading = { rate: number; p50: number; p99: number; lost: number; serviceCpu: number; brokerCpu: number; total: number }

/** Far from fan-out's sequence numbers: a straggler from another scenario never counts here. */
let nextSeq = 10_000_000

async function run(ctx: Context): Promise<ScenarioResult> {
  const messages = 20
  const inflight = 100
  const rounds = ctx.quick ? 2 : 3
  const rig = await sharedRig(ctx)
  const rabbit = await sharedRabbit(ctx)
  const ids = rig.creds.map((c) => c.id)
  const total = rig.devices * messages
  const readings: Record<Side, Reading[]> = { rabbitmq: [], embedded: [], mosquitto: [] }
  const raw: Array<Record<string, unknown>> = []

  const measure = async (side: Side, round: number) => {
    const fleet: Fleet = side === 'rabbitmq' ? rabbit.fleet : side === 'embedded' ? rig.fleetOurs : rig.fleetPeer
    // The process that takes the publishes (our service, or this one's mqtt.js client on Mosquitto) and the broker, when it is another process.
    const servicePid = side === 'rabbitmq' ? rabbit.ours.pid : side === 'embedded' ? rig.ours.pid : undefined
    const brokerPid = side === 'rabbitmq' ? rabbit.brokerPid : side === 'mosquitto' ? rig.mosquitto.pid : undefined
    await fleet.expect(total)
    const seqBase = nextSeq
    nextSeq += messages
    const s0 = servicePid ? cpuSeconds(servicePid) : selfCpuSeconds()
    const b0 = brokerPid ? cpuSeconds(brokerPid) : 0
    const g0 = cpuSeconds(fleet.pid)
    const t0 = performance.timeOrigin + performance.now()
    if (side === 'mosquitto') {
      const jobs: Array<[string, number]> = []
      for (let seq = seqBase; seq < seqBase + messages; seq++) for (const id of ids) jobs.push([topicFor(id, 'cmd'), seq])
      await publishAll(rig.service, jobs, inflight)
    } else {
      const ours = side === 'rabbitmq' ? rabbit.ours : rig.ours
      await ours.call('fanOut', { ids, count: messages, bytes: BYTES, inflight, seqBase }, 300_000)
    }
    const w = await fleet.wait(120_000)
    const serviceCpu = (servicePid ? cpuSeconds(servicePid) : selfCpuSeconds()) - s0
    const brokerCpu = brokerPid ? cpuSeconds(brokerPid) - b0 : 0
    const generatorCpu = cpuSeconds(fleet.pid) - g0
    const seconds = (w.lastAt - t0) / 1000
    const n = Math.max(1, w.received)
    readings[side].push({
      rate: w.received / seconds,
      p50: w.p50,
      p99: w.p99,
      lost: total - w.received,
      serviceCpu: (serviceCpu / n) * 1e6,
      brokerCpu: (brokerCpu / n) * 1e6,
      total: ((serviceCpu + brokerCpu) / n) * 1e6,
    })
    raw.push({
      side,
      round,
      received: w.received,
      duplicates: w.duplicates,
      seconds,
      serviceCpu,
      brokerCpu,
      generatorCpu,
      p50: w.p50,
      p99: w.p99,
    })
    ctx.log(
      `fan-out-rabbitmq ${side} round ${round + 1}: ${Math.round(w.received / seconds)} deliveries/s, CPU ${(((serviceCpu + brokerCpu) / n) * 1e6).toFixed(0)} µs/delivery, p99 ${w.p99.toFixed(1)} ms, lost ${total - w.received}`,
    )
  }
  for (let r = 0; r < rounds; r++) {
    await measure('rabbitmq', r)
    await measure('embedded', r)
    await measure('mosquitto', r)
  }

  // Every row compares one of our two ways against Mosquitto in the same rounds.
  const metric = (side: Exclude<Side, 'mosquitto'>, name: string, pick: (r: Reading) => number, better: Metric['better']): Metric => ({
    name: `${side === 'rabbitmq' ? 'RabbitMQ' : 'embedded'}: ${name}`,
    better,
    ours: readings[side].map(pick),
    peer: readings.mosquitto.map(pick),
  })
  return {
    scenario: 'fan-out-rabbitmq',
    ours: `devices on RabbitMQ ${rabbit.version} (MQTT plugin; our service as the control plane) and, in the rows so named, on our embedded broker`,
    peer: `devices on Mosquitto ${mosquittoVersion()} (password file + ACL; an mqtt.js publisher)`,
    rounds,
    metrics: [
      metric('rabbitmq', 'deliveries/s', (r) => r.rate, 'higher'),
      metric('rabbitmq', 'CPU µs/delivery, all processes', (r) => r.total, 'lower'),
      metric('rabbitmq', 'broker CPU µs/delivery (RabbitMQ; Mosquitto)', (r) => r.brokerCpu, 'lower'),
      metric('rabbitmq', 'publisher CPU µs/delivery (our service; mqtt.js)', (r) => r.serviceCpu, 'lower'),
      metric('rabbitmq', 'latency p99 ms', (r) => r.p99, 'lower'),
      metric('rabbitmq', 'lost messages', (r) => r.lost, 'lower'),
      metric('embedded', 'deliveries/s', (r) => r.rate, 'higher'),
      metric('embedded', 'CPU µs/delivery, all processes', (r) => r.total, 'lower'),
      metric('embedded', 'latency p99 ms', (r) => r.p99, 'lower'),
    ],
    notes: [
      `${rig.devices} devices with persistent sessions (clean=false), each subscribed with QoS 1 to its own devices/{id}/cmd; ${messages} messages of ${BYTES} bytes to each (${total.toLocaleString('en-US')} deliveries per round), at most ${inflight} publishes in flight; rounds alternate RabbitMQ, embedded, Mosquitto.`,
      'Ours on RabbitMQ and embedded: every message is numbered and stored by the durable downlink (PGlite) before it is published. On RabbitMQ our service publishes through its MQTT client as an internal user; the devices acknowledge to RabbitMQ (PUBACK) and do not send up/ack, so the outbox keeps the messages pending (what acknowledging would add: an uplink message and a stored event per delivery).',
      "CPU, all processes: RabbitMQ's Erlang VM (beam.smp, which also keeps the management plugin's statistics) plus our service; our service alone when embedded; Mosquitto plus the mqtt.js publisher (this benchmark's process). The device fleets run in separate load-generator processes, not counted.",
      `Setup (not timed as a metric): ${rig.devices} devices connected and subscribed on RabbitMQ in ${((rabbit.connect.end - rabbit.connect.start) / 1000).toFixed(1)} s (seeded as devices paired before: each CONNECT and SUBSCRIBE asked our HTTP auth backend, which made each device a RabbitMQ user for its next connect; bench/probes/rabbitmq-connects.ts measures those), presence from the event exchange stored after ${(rabbit.connect.eventsMs / 1000).toFixed(1)} s.`,
    ],
    details: { devices: rig.devices, messages, bytes: BYTES, inflight, rabbitmq: rabbit.version, raw },
  }
}

export const fanOutRabbitmq: Scenario = {
  name: 'fan-out-rabbitmq',
  summary: 'the fan-out workload on RabbitMQ (our service as the control plane), our embedded broker and Mosquitto',
  uses: ['ours', 'rig', 'rabbit'],
  prepare: sharedRabbit,
  run,
}
