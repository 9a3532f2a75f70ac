// Connects per second on RabbitMQ's MQTT listener with our service as its control plane: N
// devices (seeded straight into the database, as devices paired before: no RabbitMQ user yet)
// connect and subscribe (their own cmd topic and the fleet topic, CONCURRENCY (100) at a time), disconnect,
// and do it again, ROUNDS times. Per round: connects/s, the CPU RabbitMQ's Erlang VM and our
// service spent per connect, and how many calls reached our HTTP auth routes. Small enough for a
// RabbitMQ left at Debian's 1,024 open files (the bench's fan-out-rabbitmq needs more). Runs
// against any checkout, alternating (a worktree of an older commit, node_modules linked):
//
//   npx tsx bench/probes/rabbitmq-connects.ts [CHECKOUT] [N] [ROUNDS] [CONCURRENCY]
//
// Puts RabbitMQ back as it found it (the test helper's restore: plugins, settings, users).
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const root = resolve(process.argv[2] ?? '.')
const n = Number(process.argv[3] ?? 300)
const rounds = Number(process.argv[4] ?? 4)
const concurrency = Number(process.argv[5] ?? 100)
const load = (path: string) => import(pathToFileURL(join(root, path)).href)

const { RABBIT, setUpRabbitMQ } = await load('test/helpers/rabbitmq.ts')
const { startOurs, makeCreds, writeCreds } = await load('bench/lib/ours.ts')
const { startFleet } = await load('bench/lib/fleet.ts')
const { OURS_BENCH_ENV, waitForEvents } = await load('bench/lib/shared.ts')
const { cpuSeconds } = await load('bench/lib/proc.ts')
const { freePort } = await load('bench/lib/ports.ts')
const { execFileSync } = await import('node:child_process')

const teardowns: Array<() => unknown> = []
const work = mkdtempSync(join(tmpdir(), 'rabbit-connects-'))
const management = new URL(RABBIT.managementUrl)
const authorization = `Basic ${Buffer.from(`${management.username}:${management.password}`).toString('base64')}`
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-/
/** Internal users named like devices. */
const deviceUsers = async () => {
  const res = await fetch(`${management.origin}/api/users?columns=name`, { headers: { authorization } })
  return ((await res.json()) as Array<{ name: string }>).filter((u) => UUID.test(u.name)).length
}

try {
  const port = await freePort()
  // RabbitMQ reaches the service through this proxy, which counts the calls.
  let hookCalls = 0
  const proxy = createServer((req, res) => {
    hookCalls++
    const up = request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers)
      r.pipe(res)
    })
    up.on('error', () => res.writeHead(502).end())
    req.pipe(up)
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  teardowns.push(() => proxy.close())
  const secret = `probe-${randomBytes(16).toString('hex')}`
  await setUpRabbitMQ(
    { teardown: (fn: () => unknown) => teardowns.push(fn) },
    `http://127.0.0.1:${(proxy.address() as { port: number }).port}`,
    secret,
  )
  const brokerId = `probe-${randomBytes(4).toString('hex')}`
  const presenceQueue = `dps.presence.probe-${randomBytes(4).toString('hex')}`
  teardowns.push(() =>
    execFileSync('rabbitmqctl', [
      '-q',
      'eval',
      `[rabbit_amqqueue:delete_immediately_by_resource([rabbit_misc:r(<<"/">>, queue, Q)]) || Q <- [<<"${presenceQueue}">>, <<"mqtt-subscription-dps-service-${brokerId}qos1">>]], ok.`,
    ]),
  )
  const ours = await startOurs({
    port,
    dataDir: mkdtempSync(join(work, 'ours-')),
    env: {
      ...OURS_BENCH_ENV,
      MQTT_EXTERNAL_URL: RABBIT.mqttUrl,
      MQTT_EXTERNAL_USERNAME: RABBIT.service.username,
      MQTT_EXTERNAL_PASSWORD: RABBIT.service.password,
      MQTT_AUTH_SECRET: secret,
      RABBITMQ_AMQP_URL: RABBIT.amqpUrl,
      RABBITMQ_MANAGEMENT_URL: RABBIT.managementUrl,
      RABBITMQ_PRESENCE_QUEUE: presenceQueue,
      MQTT_BROKER_ID: brokerId,
    },
  })
  teardowns.push(() => ours.stop({ graceful: true }))
  const creds = makeCreds(n)
  await ours.call('seed', { file: writeCreds(work, 'creds', creds) }, 300_000)
  const fleet = await startFleet()
  teardowns.push(() => fleet.stop())
  const beam = Number(execFileSync('rabbitmqctl', ['-q', 'eval', 'list_to_integer(os:getpid()).']).toString().trim())
  const mqttPort = Number(new URL(RABBIT.mqttUrl).port)
  for (let round = 1; round <= rounds; round++) {
    const since = Date.now() - 1000
    hookCalls = 0
    const b0 = cpuSeconds(beam)
    const s0 = cpuSeconds(ours.pid)
    const co = await fleet.connect({ port: mqttPort, creds, clean: true, subscribe: ['devices/{id}/cmd', 'fleet/cmd'], concurrency })
    const seconds = (co.end - co.start) / 1000
    const calls = hookCalls
    const b1 = cpuSeconds(beam)
    const s1 = cpuSeconds(ours.pid)
    const stored = await waitForEvents(ours, 'device.connected', since, n, 120_000)
    // Whatever provisioning the round started ends before the next (a few seconds at most).
    let users = await deviceUsers()
    for (let i = 0; i < 50 && users > 0 && users < n; i++) {
      await new Promise((r) => setTimeout(r, 200))
      users = await deviceUsers()
    }
    console.log(
      JSON.stringify({
        round,
        devices: n,
        connectsPerSecond: Math.round(n / seconds),
        seconds: Number(seconds.toFixed(2)),
        cpuMsPerConnect: { rabbitmq: Number((((b1 - b0) / n) * 1000).toFixed(2)), service: Number((((s1 - s0) / n) * 1000).toFixed(2)) },
        hookCalls: calls,
        failed: co.failed ? co.codes : 0,
        presenceStored: stored,
        deviceUsersAfter: users,
      }),
    )
    const off = Date.now() - 1000
    await fleet.disconnect(true)
    await waitForEvents(ours, 'device.disconnected', off, n, 60_000)
  }
} finally {
  for (const fn of teardowns.splice(0).reverse()) await Promise.resolve(fn()).catch((err: unknown) => console.error('teardown:', err))
  rmSync(work, { recursive: true, force: true })
}
