// fleet (issue 34): our service as a cluster (several instances sharing PostgreSQL and Redis,
// each holding at most ~18,000 devices, since a process here may open 20,000 files) and N
// devices (100,000; --quick 2,000; FLEET_DEVICES=N) with persistent sessions and a QoS 1
// subscription to their own topic and fleet/cmd, connecting at once: device i to instance
// i mod K, from several load-generator processes (each ≤ 18,000 sockets, 8 loopback source
// addresses of its own). Then a broadcast on fleet/cmd and one message to every device through
// the durable downlink (published by every instance, each for its share of the ids, so most cross
// Redis), counted per device (distinct sequence numbers, duplicates apart).
// Each round is a fresh cluster (new instances, new REDIS_PREFIX) on the database seeded once.
// Peer: one Mosquitto process with the same devices, as many as one process may hold (all of them
// when N ≤ 18,000), for connects/s, memory per session and the deliveries.
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import type { MqttClient } from 'mqtt'
import postgres from 'postgres'
import { deviceFilter, FLEET_TOPIC, topicFor } from '../../src/mqtt/contract.js'
import { openFileLimits } from '../lib/child.js'
import type { Context, Scenario } from '../lib/context.js'
import { startFleet, type ConnectResult, type Fleet } from '../lib/fleet.js'
import { planFleet, SOCKETS_PER_PROCESS, split } from '../lib/fleet-plan.js'
import { mosquittoVersion, connectService, startMosquitto, writeMosquittoAuth } from '../lib/mosquitto.js'
import { freshPostgres, makeCreds, startOurs, writeCreds, type Cred, type Ours } from '../lib/ours.js'
import { sourceAddresses } from '../lib/ports.js'
import { PG_URL, pgCpu, postgresReachable } from '../lib/postgres.js'
import { cpuSeconds, steadyRss } from '../lib/proc.js'
import type { Metric, ScenarioResult } from '../lib/report.js'
import { waitForEvents } from '../lib/shared.js'
import { Unavailable } from '../lib/unavailable.js'
import { BYTES, publishAll } from './fan-out.js'

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
/** What each instance, worker and Mosquitto is started with (the hard limit here is 20,000). */
const OPEN_FILES = 20_000
const BROADCASTS = 2
/** How long the observer's idle CPU is measured before the storm. */
const OBSERVER_IDLE_MS = 10_000
/** How long a storm may take before the round fails: 100,000 devices at today's ~300 connects/s (a busy machine) take over 5 minutes. */
const STORM_TIMEOUT_MS = 30 * 60_000

type Side = 'ours' | 'peer'

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
const now = () => performance.timeOrigin + performance.now()

/** CPU seconds over a span: the broker (every instance, or Mosquitto), PostgreSQL's backends and Redis (ours). */
type Cpu = { broker: number; db: number | null; redis: number | null }
type Meter = { begin(): Promise<void>; end(): Promise<Cpu> }

type Delivery = { expected: number; received: number; duplicates: number; seconds: number; cpu: Cpu; p99: number }

type Round = {
  side: Side
  round: number
  devices: number
  connackSeconds: number
  /** Ours: until every device.connected event is stored and every device row is active. */
  storedSeconds: number | null
  connectCpu: Cpu
  rssBefore: number
  rssAfter: number
  redisBytes: number | null
  redisKeys: number | null
  /** Redis pub/sub subscriptions the cluster holds once every device is subscribed: channels under the prefix, and patterns (PUBSUB NUMPAT's growth: a PUBLISH matches every pattern). */
  redisChannels: number | null
  redisPatterns: number | null
  /** Null with FLEET_STORM_ONLY. */
  broadcast: Delivery | null
  fanOut: Delivery | null
  /**
   * Ours: CPU seconds during the storm of one more instance holding no device, less what it spends
   * idle (its timers and polls, measured over OBSERVER_IDLE_MS before): what an instance pays for
   * the devices connected to the others.
   */
  observerCpu: number | null
  /** Ours: seconds to start the round's cluster (no sessions stored yet), and one more instance once every session is. */
  clusterStartSeconds: number | null
  joinSeconds: number | null
  failed: number
}

async function redisReachable(url: string): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null })
  r.on('error', () => {})
  try {
    await r.connect()
    return (await r.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    r.disconnect()
  }
}

/** Redis' own pid (to read its CPU from /proc; it serves others on this machine too) and memory in use. */
async function redisInfo(r: Redis): Promise<{ pid: number; usedMemory: number }> {
  const info = await r.info()
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN)
  return { pid: field('process_id'), usedMemory: field('used_memory') }
}

function redisCpu(pid: number): number | null {
  try {
    return cpuSeconds(pid)
  } catch {
    return null
  }
}

/** CPU of the broker processes, and of Redis and this database's PostgreSQL backends when given. */
function oursMeter(pids: number[], redisPid: number | undefined, db: ReturnType<typeof pgCpu> | undefined): Meter {
  const broker = () => sum(pids.map(cpuSeconds))
  let b0 = 0
  let r0: number | null = null
  return {
    async begin() {
      await db?.begin()
      b0 = broker()
      r0 = redisPid === undefined ? null : redisCpu(redisPid)
    },
    async end() {
      const b = broker() - b0
      const r1 = redisPid === undefined ? null : redisCpu(redisPid)
      return { broker: b, redis: r0 !== null && r1 !== null ? r1 - r0 : null, db: db ? await db.end() : null }
    },
  }
}

/** Every key under `prefix`: counted, or deleted (a round's cluster leaves its sessions behind). */
async function scanKeys(r: Redis, prefix: string, remove: boolean): Promise<number> {
  let cursor = '0'
  let n = 0
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 5000)
    cursor = next
    n += keys.length
    if (remove && keys.length) await r.unlink(...keys)
  } while (cursor !== '0')
  return n
}

async function setup(ctx: Context) {
  const override = Number(process.env.FLEET_DEVICES ?? '')
  const devices = override > 0 ? Math.round(override) : ctx.quick ? 2000 : 100_000
  const instancesOverride = Number(process.env.FLEET_INSTANCES ?? '')
  const plan = planFleet(devices, instancesOverride > 0 ? { instances: instancesOverride } : {})
  if (!(await postgresReachable(PG_URL))) throw new Unavailable(`PostgreSQL is not reachable at ${PG_URL} (a cluster needs it)`)
  if (!(await redisReachable(REDIS_URL))) throw new Unavailable(`Redis is not reachable at ${REDIS_URL} (a cluster needs it)`)
  const limits = openFileLimits()
  const perProcess = Math.ceil(devices / plan.workers)
  if (limits.hard < perProcess + 1000)
    throw new Unavailable(
      `the open-files hard limit is ${limits.hard}: each process of the fleet holds up to ${perProcess} sockets (raise it to at least ${perProcess + 1000}, e.g. LimitNOFILE or /etc/security/limits.conf)`,
    )
  const openFiles = Math.min(OPEN_FILES, limits.hard)
  const dir = mkdtempSync(join(ctx.workDir, 'fleet-'))
  const creds = makeCreds(devices)
  const credsFile = writeCreds(dir, 'creds', creds)
  ctx.log(`fleet: ${devices} devices over ${plan.instances} instances and ${plan.workers} load generators; seeding PostgreSQL`)
  const db = await freshPostgres(PG_URL)
  const peerCreds = creds.slice(0, Math.min(devices, SOCKETS_PER_PROCESS))
  return {
    plan,
    openFiles,
    dir,
    creds,
    credsFile,
    db,
    peerCreds,
    // One DATA_DIR for every instance (the cluster's object store and firmware key) and one AUTH_SECRET.
    dataDir: mkdtempSync(join(dir, 'data-')),
    authSecret: randomBytes(32).toString('base64url'),
    seeded: false,
    auth: writeMosquittoAuth(dir, peerCreds),
  }
}

type Setup = Awaited<ReturnType<typeof setup>>

const prepared = (ctx: Context) =>
  ctx.shared<Setup>(
    'fleet-setup',
    () => setup(ctx),
    async (s) => s.db.drop(),
  )

/** One instance of the round's cluster (`k`-th; the first writes the firmware key into the shared DATA_DIR). */
function startInstance(s: Setup, prefix: string, round: number, k: number): Promise<Ours> {
  return startOurs({
    dataDir: s.dataDir,
    databaseUrl: s.db.url,
    redisUrl: REDIS_URL,
    openFiles: s.openFiles,
    execArgv: ['--expose-gc', '--max-semi-space-size=1'],
    env: { REDIS_PREFIX: prefix, AUTH_SECRET: s.authSecret, MQTT_BROKER_ID: `bench-fleet-${round}-${k}` },
  })
}

/**
 * A cluster of the plan's instances under a fresh prefix: the first alone, then the rest at once,
 * and an observer (one more instance that no device connects to) after them.
 */
async function startCluster(s: Setup, round: number): Promise<{ instances: Ours[]; observer: Ours; prefix: string; startSeconds: number }> {
  const prefix = `bench-fleet:${randomBytes(4).toString('hex')}:`
  const instances: Ours[] = []
  const t0 = now()
  try {
    instances.push(await startInstance(s, prefix, round, 0))
    const rest = await Promise.allSettled(Array.from({ length: s.plan.instances - 1 }, (_, i) => startInstance(s, prefix, round, i + 1)))
    for (const r of rest) if (r.status === 'fulfilled') instances.push(r.value)
    const failed = rest.find((r) => r.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason
  } catch (err) {
    await Promise.all(instances.map((o) => o.stop({ graceful: false })))
    throw err
  }
  const startSeconds = (now() - t0) / 1000
  try {
    return { instances, observer: await startInstance(s, prefix, round, s.plan.instances), prefix, startSeconds }
  } catch (err) {
    await Promise.all(instances.map((o) => o.stop({ graceful: false })))
    throw err
  }
}

async function measure(ctx: Context) {
  const s = await prepared(ctx)
  const { plan } = s
  const results: Round[] = []
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {} })
  const bench = postgres(s.db.url, { max: 1, onnotice: () => {} })
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  const fleets: Fleet[] = []
  // Two rounds give a range; at 100,000 devices one round takes several minutes (FLEET_ROUNDS=1 halves the run).
  const rounds = Number(process.env.FLEET_ROUNDS ?? '') || (ctx.quick ? 1 : 2)
  let addressOffset = 0
  let seq = 0
  // FLEET_SUBSCRIBE=wildcard: devices/{id}/# instead of devices/{id}/cmd, which the ACL allows and
  // which mqemitter-redis turns into one Redis PSUBSCRIBE per device (see docs/benchmarks.md).
  const wildcard = process.env.FLEET_SUBSCRIBE === 'wildcard'
  // FLEET_STORM_ONLY=1 (development): the connect storm alone, no deliveries, joining instance or Mosquitto.
  const stormOnly = process.env.FLEET_STORM_ONLY === '1'
  const topics = [wildcard ? deviceFilter('{id}', '#') : topicFor('{id}', 'cmd'), FLEET_TOPIC]

  /** Every worker connects its share of `creds` to `ports` (device i to ports[i mod K]); fresh source addresses each time, the last round's may sit in TIME_WAIT. */
  const connectAll = async (creds: Cred[], ports: number[]) => {
    const parts = split(creds, fleets.length)
    const rs = await Promise.all(
      fleets.map((f, w) =>
        f.connect({
          ports,
          creds: parts[w]!,
          clean: false,
          subscribe: topics,
          concurrency: 200,
          localAddresses: sourceAddresses(8, addressOffset + 8 * w),
          timeoutMs: STORM_TIMEOUT_MS,
        }),
      ),
    )
    addressOffset += 8 * fleets.length
    const codes: Record<string, number> = {}
    for (const r of rs) for (const [c, n] of Object.entries(r.codes)) codes[c] = (codes[c] ?? 0) + n
    return {
      connected: sum(rs.map((r) => r.connected)),
      failed: sum(rs.map((r) => r.failed)),
      codes,
      start: Math.min(...rs.map((r) => r.start)),
      end: Math.max(...rs.map((r) => r.end)),
      parts: parts.map((p) => p.length),
    } satisfies ConnectResult & { parts: number[] }
  }

  /** Runs `publish` and waits until every worker has `perDevice` messages per device (or the timeout), metering the CPU meanwhile. */
  const deliver = async (parts: number[], perDevice: number, meter: Meter, publish: () => Promise<unknown>): Promise<Delivery> => {
    await Promise.all(fleets.map((f, w) => f.expect((parts[w] ?? 0) * perDevice)))
    await meter.begin()
    const t0 = now()
    await publish()
    // 10 ms per expected delivery: a slow cluster is reported slow, not as losing messages.
    const ws = await Promise.all(fleets.map((f) => f.wait(Math.max(120_000, sum(parts) * perDevice * 10))))
    return {
      expected: sum(parts) * perDevice,
      received: sum(ws.map((w) => w.received)),
      duplicates: sum(ws.map((w) => w.duplicates)),
      seconds: (Math.max(...ws.map((w) => w.lastAt)) - t0) / 1000,
      cpu: await meter.end(),
      p99: Math.max(...ws.map((w) => w.p99)),
    }
  }

  const ours = async (round: number) => {
    const { instances, observer, prefix, startSeconds } = await startCluster(s, round)
    const pids = instances.map((o) => o.pid)
    try {
      if (!s.seeded) {
        await instances[0]!.call('seed', { file: s.credsFile }, 900_000)
        s.seeded = true
      }
      // The last round's cluster was killed with every device still marked active.
      await bench`update device set is_active = false`
      const { pid: redisPid, usedMemory: redis0 } = await redisInfo(redis)
      const patterns0 = Number(await redis.pubsub('NUMPAT'))
      const rssBefore = await Promise.all(instances.map((o) => steadyRss(o.pid, o)))
      const meter = oursMeter(pids, redisPid, pgCpu(admin, new URL(s.db.url).pathname.slice(1)))
      const idle0 = cpuSeconds(observer.pid)
      await new Promise((res) => setTimeout(res, OBSERVER_IDLE_MS))
      const idlePerSecond = (cpuSeconds(observer.pid) - idle0) / (OBSERVER_IDLE_MS / 1000)
      await meter.begin()
      const observer0 = cpuSeconds(observer.pid)
      const stormStart = now()
      const since = Date.now() - 1000
      const r = await connectAll(
        s.creds,
        instances.map((o) => o.mqttPort),
      )
      if (r.failed) throw new Error(`fleet: ${r.failed} devices failed to connect to the cluster: ${JSON.stringify(r.codes)}`)
      const stored = await waitForEvents(instances[0]!, 'device.connected', since, plan.devices, STORM_TIMEOUT_MS)
      if (stored < plan.devices) throw new Error(`fleet: only ${stored} of ${plan.devices} connect events stored`)
      for (;;) {
        const [row] = await bench<{ n: number }[]>`select count(*)::int as n from device where is_active`
        const n = row?.n ?? 0
        if (n >= plan.devices) break
        if (now() - r.start > STORM_TIMEOUT_MS) throw new Error(`fleet: only ${n} of ${plan.devices} devices active`)
        await new Promise((res) => setTimeout(res, 200))
      }
      const storedSeconds = (now() - r.start) / 1000
      const connectCpu = await meter.end()
      const observerCpu = cpuSeconds(observer.pid) - observer0 - (idlePerSecond * (now() - stormStart)) / 1000
      const rssAfter = await Promise.all(instances.map((o) => steadyRss(o.pid, o)))
      const { usedMemory: redis1 } = await redisInfo(redis)
      const redisKeys = await scanKeys(redis, prefix, false)
      const redisChannels = ((await redis.pubsub('CHANNELS', `${prefix}*`)) as string[]).length
      const redisPatterns = Number(await redis.pubsub('NUMPAT')) - patterns0

      const base = seq
      seq += BROADCASTS + 1
      const broadcast = stormOnly
        ? null
        : await deliver(r.parts, BROADCASTS, meter, () =>
            instances[0]!.call('broadcast', { count: BROADCASTS, bytes: BYTES, inflight: 10, seqBase: base }, STORM_TIMEOUT_MS),
          )
      const ids = s.creds.map((c) => c.id)
      const shares = split(ids, instances.length)
      const fanOut = stormOnly
        ? null
        : await deliver(r.parts, 1, meter, () =>
            Promise.all(
              instances.map((o, k) =>
                o.call('fanOut', { ids: shares[k], count: 1, bytes: BYTES, inflight: 100, seqBase: base + BROADCASTS }, STORM_TIMEOUT_MS),
              ),
            ),
          )
      // How long a node joining (or restarting into) this cluster with every session stored
      // takes to be ready (aedes-persistence-redis read every stored session at start).
      let joinSeconds: number | null = null
      if (!stormOnly) {
        const t0 = now()
        const joining = await startInstance(s, prefix, round, instances.length + 1)
        joinSeconds = (now() - t0) / 1000
        await joining.stop({ graceful: false })
      }
      const row: Round = {
        side: 'ours',
        round,
        devices: plan.devices,
        connackSeconds: (r.end - r.start) / 1000,
        storedSeconds,
        connectCpu,
        rssBefore: sum(rssBefore),
        rssAfter: sum(rssAfter),
        redisBytes: redis1 - redis0,
        redisKeys,
        redisChannels,
        redisPatterns,
        broadcast,
        fanOut,
        observerCpu,
        clusterStartSeconds: startSeconds,
        joinSeconds,
        failed: r.failed,
      }
      results.push(row)
      const delivered = (d: Delivery | null) => (d ? `${d.received}/${d.expected} (${d.duplicates} dup)` : 'not run')
      ctx.log(
        `fleet ours round ${round + 1}: CONNACK ${row.connackSeconds.toFixed(1)} s, stored ${storedSeconds.toFixed(1)} s, ${((row.rssAfter - row.rssBefore) / plan.devices / 1024).toFixed(1)} KiB/session, instances ${((connectCpu.broker / plan.devices) * 1000).toFixed(2)} CPU ms/connect, observer ${((observerCpu / plan.devices) * 1000).toFixed(3)} (its idle ${(idlePerSecond * 1000).toFixed(1)} CPU ms/s subtracted), broadcast ${delivered(broadcast)}, fan-out ${delivered(fanOut)}`,
      )
    } finally {
      // Killed, not closed: a graceful close would store N disconnect events first. Closed when
      // profiling (BENCH_CPU_PROF), since V8 writes the profile only on a clean exit.
      await Promise.all([...instances, observer].map((o) => o.stop({ graceful: Boolean(process.env.BENCH_CPU_PROF) })))
      await Promise.all(fleets.map((f) => f.disconnect(false)))
      await scanKeys(redis, prefix, true).catch((err) => ctx.log(`fleet: could not delete Redis keys under ${prefix}: ${err}`))
    }
  }

  const peer = async (round: number) => {
    const m = await startMosquitto(s.dir, s.auth, `mosquitto-fleet-${round}`, { openFiles: s.openFiles })
    let service: MqttClient | undefined
    try {
      const rssBefore = await steadyRss(m.pid)
      const meter = oursMeter([m.pid], undefined, undefined)
      await meter.begin()
      const r = await connectAll(s.peerCreds, [m.port])
      if (r.failed) throw new Error(`fleet: ${r.failed} devices failed to connect to Mosquitto: ${JSON.stringify(r.codes)}`)
      const connectCpu = await meter.end()
      const rssAfter = await steadyRss(m.pid)
      service = await connectService(m.port)
      const client = service
      const base = seq
      seq += BROADCASTS + 1
      const broadcast = await deliver(r.parts, BROADCASTS, meter, () =>
        publishAll(
          client,
          Array.from({ length: BROADCASTS }, (_, i) => [FLEET_TOPIC, base + i] as [string, number]),
          10,
        ),
      )
      const fanOut = await deliver(r.parts, 1, meter, () =>
        publishAll(
          client,
          s.peerCreds.map((c) => [topicFor(c.id, 'cmd'), base + BROADCASTS] as [string, number]),
          100,
        ),
      )
      const row: Round = {
        side: 'peer',
        round,
        devices: s.peerCreds.length,
        connackSeconds: (r.end - r.start) / 1000,
        storedSeconds: null,
        connectCpu,
        rssBefore,
        rssAfter,
        redisBytes: null,
        redisKeys: null,
        redisChannels: null,
        redisPatterns: null,
        broadcast,
        fanOut,
        observerCpu: null,
        clusterStartSeconds: null,
        joinSeconds: null,
        failed: r.failed,
      }
      results.push(row)
      ctx.log(
        `fleet peer round ${round + 1}: ${row.devices} devices, CONNACK ${row.connackSeconds.toFixed(1)} s, ${((rssAfter - rssBefore) / row.devices / 1024).toFixed(1)} KiB/session, broadcast ${broadcast.received}/${broadcast.expected}, fan-out ${fanOut.received}/${fanOut.expected}`,
      )
    } finally {
      await service?.endAsync().catch(() => {})
      await Promise.all(fleets.map((f) => f.disconnect(false)))
      await m.stop()
    }
  }

  try {
    for (let w = 0; w < plan.workers; w++) fleets.push(await startFleet({ openFiles: s.openFiles }))
    for (let i = 0; i < rounds; i++) {
      await ours(i)
      if (!stormOnly) await peer(i)
    }
  } finally {
    await Promise.all(fleets.map((f) => f.stop()))
    await Promise.all([admin.end(), bench.end()]).catch(() => {})
    redis.disconnect()
  }
  return { plan, rounds, peerDevices: s.peerCreds.length, topics, results }
}

const n = (x: number) => x.toLocaleString('en-US')
/** A delivery's figure, or none for a round that ran the storm alone. */
const delivery = (d: Delivery | null, f: (d: Delivery) => number) => (d ? f(d) : null)
const perUnit = (x: number | null, units: number) => (x === null || units === 0 ? Number.NaN : x / units)

function result(m: Awaited<ReturnType<typeof measure>>): ScenarioResult {
  const { plan } = m
  const pick = (side: Side, f: (r: Round) => number | null) => m.results.filter((r) => r.side === side).map((r) => f(r) ?? NaN)
  const both = (name: string, better: Metric['better'], f: (r: Round) => number | null): Metric => ({
    name,
    better,
    ours: pick('ours', f),
    peer: pick('peer', f),
  })
  const oursOnly = (name: string, better: Metric['better'], f: (r: Round) => number | null): Metric => ({
    name,
    better,
    ours: pick('ours', f),
    peer: [],
  })
  const sameN = m.peerDevices === plan.devices
  return {
    scenario: 'fleet',
    ours: `our service as a cluster: ${plan.instances} instances on PostgreSQL + Redis, ${n(plan.devices)} devices`,
    peer: `Mosquitto ${mosquittoVersion()} (one process, ${n(m.peerDevices)} devices)`,
    rounds: m.rounds,
    metrics: [
      both('connects/s (ours: until presence stored)', 'higher', (r) => r.devices / (r.storedSeconds ?? r.connackSeconds)),
      (sameN ? both : oursOnly)('seconds until every CONNACK + SUBACK', 'lower', (r) => r.connackSeconds),
      oursOnly('seconds until every presence stored (events + is_active)', 'lower', (r) => r.storedSeconds),
      both('broker CPU ms/connect (all instances)', 'lower', (r) => (r.connectCpu.broker / r.devices) * 1000),
      oursOnly('PostgreSQL CPU ms/connect', 'lower', (r) => perUnit(r.connectCpu.db, r.devices) * 1000),
      oursOnly('Redis CPU ms/connect', 'lower', (r) => perUnit(r.connectCpu.redis, r.devices) * 1000),
      both('resident KiB per session (all instances)', 'lower', (r) => (r.rssAfter - r.rssBefore) / r.devices / 1024),
      (sameN ? both : oursOnly)('resident MiB in total with every session', 'lower', (r) => r.rssAfter / 2 ** 20),
      oursOnly('Redis bytes per session', 'lower', (r) => (r.redisBytes === null ? null : r.redisBytes / r.devices)),
      oursOnly('Redis keys per session', 'lower', (r) => (r.redisKeys === null ? null : r.redisKeys / r.devices)),
      oursOnly('Redis pub/sub channels per session', 'lower', (r) => perUnit(r.redisChannels, r.devices)),
      oursOnly('Redis pub/sub patterns per session', 'lower', (r) => perUnit(r.redisPatterns, r.devices)),
      oursOnly('CPU ms per connect elsewhere (an instance holding no device)', 'lower', (r) => perUnit(r.observerCpu, r.devices) * 1000),
      oursOnly('seconds to start the cluster (no sessions stored)', 'lower', (r) => r.clusterStartSeconds),
      oursOnly('seconds to start one more instance with every session stored', 'lower', (r) => r.joinSeconds),
      both('broadcast deliveries/s', 'higher', (r) => delivery(r.broadcast, (d) => d.received / d.seconds)),
      both('broadcast lost', 'lower', (r) => delivery(r.broadcast, (d) => d.expected - d.received)),
      both('broadcast duplicates', 'lower', (r) => delivery(r.broadcast, (d) => d.duplicates)),
      both('broadcast broker CPU µs/delivery (all instances)', 'lower', (r) =>
        delivery(r.broadcast, (d) => perUnit(d.cpu.broker, d.received) * 1e6),
      ),
      oursOnly('broadcast Redis CPU µs/delivery', 'lower', (r) => delivery(r.broadcast, (d) => perUnit(d.cpu.redis, d.received) * 1e6)),
      both('fan-out deliveries/s', 'higher', (r) => delivery(r.fanOut, (d) => d.received / d.seconds)),
      both('fan-out lost', 'lower', (r) => delivery(r.fanOut, (d) => d.expected - d.received)),
      both('fan-out duplicates', 'lower', (r) => delivery(r.fanOut, (d) => d.duplicates)),
      both('fan-out broker CPU µs/delivery (all instances)', 'lower', (r) =>
        delivery(r.fanOut, (d) => perUnit(d.cpu.broker, d.received) * 1e6),
      ),
      oursOnly('fan-out PostgreSQL CPU µs/delivery', 'lower', (r) => delivery(r.fanOut, (d) => perUnit(d.cpu.db, d.received) * 1e6)),
      oursOnly('fan-out Redis CPU µs/delivery', 'lower', (r) => delivery(r.fanOut, (d) => perUnit(d.cpu.redis, d.received) * 1e6)),
    ],
    notes: [
      `${n(plan.devices)} devices (FLEET_DEVICES; default 100,000, --quick 2,000) connect at once, device i to instance i mod ${plan.instances}, from ${plan.workers} load-generator process(es) (at most 200 dialing at a time each, 8 source addresses each); persistent sessions (clean=false), one SUBSCRIBE of ${m.topics[0]} and fleet/cmd with QoS 1. Each round starts a fresh cluster (new instances, new REDIS_PREFIX) on one database seeded once.`,
      'Presence stored: every device.connected event in the database and every device row is_active. CPU per connect: the instances together; PostgreSQL (the backends of this database) and Redis (its whole process: it may serve others on this machine) apart. Resident memory: the sum of every instance, collected and steady, before and after the storm.',
      'CPU per connect elsewhere: one more instance of the cluster that no device connects to, its CPU during the storm per device: what each instance pays for the devices connected to the others (not counted in the instances figure).',
      `Broadcast: ${BROADCASTS} QoS 1 messages of ${BYTES} bytes on fleet/cmd published by one instance (through Redis to the others). Fan-out: one message to every device through the durable downlink (stored, numbered, resent until PUBACK), each instance publishing for a share of the ids, so most cross Redis. CPU per delivery: every instance, and PostgreSQL's backends and Redis apart (ours); Mosquitto's process (peer; its mqtt.js publisher is not counted).`,
      sameN
        ? 'Mosquitto holds the same devices in one process.'
        : `Mosquitto is one process, which may hold at most ~${n(SOCKETS_PER_PROCESS)} connections here (20,000 open files): it runs with the first ${n(m.peerDevices)} devices, so its rates and per-session figures compare, its totals do not.`,
    ],
    details: { plan, peerDevices: m.peerDevices, topics: m.topics, rounds: m.results },
  }
}

export const fleet: Scenario = {
  name: 'fleet',
  summary: 'a cluster of our service (PostgreSQL + Redis) and 100,000 devices reconnecting at once (FLEET_DEVICES for another size)',
  onlyWhenNamed: 'it takes 20 to 30 minutes at 100,000 devices on 2 cores',
  uses: ['fleet-setup'],
  prepare: prepared,
  async run(ctx): Promise<ScenarioResult> {
    return result(await measure(ctx))
  },
}
