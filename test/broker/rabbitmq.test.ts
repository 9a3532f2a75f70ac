// External-broker mode against the machine's RabbitMQ (docs/rabbitmq.md): devices live on its
// MQTT listener, authorised by our HTTP auth backend routes; presence from its event exchange;
// kicks through its management API. Skipped when RabbitMQ is not here, except in CI.
import { randomBytes } from 'node:crypto'
import { createServer, request } from 'node:http'
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { jsonCall } from '../helpers/http.js'
import { freePort, startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { connect, eventually, nextMessage, subackCodes } from '../helpers/mqtt.js'
import { deleteDeviceRows } from '../../src/devices/repository.js'
import { rabbitManagement } from '../../src/mqtt/rabbitmq-management.js'
import { deleteQueues, RABBIT, rabbitmqMissing, setUpRabbitMQ, rabbitServiceEnv } from '../helpers/rabbitmq.js'
import { ACL_MATRIX } from '../helpers/acl-matrix.js'
import { signUpAdmin } from '../helpers/admin.js'
import { appFetch } from '../helpers/app-fetch.js'

const missing = await rabbitmqMissing()
if (missing && process.env.CI) t.fail(`CI must run the RabbitMQ tests: ${missing}`)
const SECRET = `hook-${randomBytes(16).toString('hex')}`

const ADMIN_EMAIL = uniqueEmail('rabbit-admin')

t.test('RabbitMQ as the external broker', { skip: missing && !process.env.CI ? missing : false }, async (t) => {
  const port = await freePort()
  // RabbitMQ calls the service through this proxy, which counts the calls per route.
  const hookCalls = new Map<string, number>()
  const proxy = createServer((req, res) => {
    const route = (req.url ?? '').split('/').pop() ?? ''
    hookCalls.set(route, (hookCalls.get(route) ?? 0) + 1)
    const upstream = request({ host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    upstream.on('error', () => res.writeHead(502).end())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => proxy.close())
  const hookUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
  await setUpRabbitMQ(t, hookUrl, SECRET)
  const management = rabbitManagement(RABBIT.managementUrl)
  const env = { ...rabbitServiceEnv(port, SECRET), ADMIN_EMAILS: ADMIN_EMAIL }
  // Registered before the service starts: tap runs teardowns last-registered first, and a queue
  // deleted while the service runs is declared again by its reconnect (and then gathers every
  // device's uplink for good).
  const queues = [env.RABBITMQ_PRESENCE_QUEUE]
  t.teardown(() => deleteQueues(queues))
  let svc: TestApp = await startApp(t, { env })
  queues.push(`mqtt-subscription-dps-service-${svc.config.mqtt.brokerId}qos1`)
  t.equal(svc.app.broker, undefined, 'no embedded broker starts')
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('rabbit'))

  const asDevice = (dev: PairedDevice, over: { password?: string; clientId?: string } = {}) =>
    connect(RABBIT.mqttUrl, { clientId: over.clientId ?? dev.deviceId, username: dev.deviceId, password: over.password ?? dev.password })
  const refused = (attempt: Promise<MqttClient>) =>
    attempt.then(
      (c) => {
        c.end(true)
        return false
      },
      () => true,
    )
  const api = async <T>(method: string, path: string, body?: unknown) =>
    (await jsonCall(svc.url, path, { method, token, body })) as { status: number; body: T }
  const events = async (deviceId: string) =>
    (await api<{ events: Array<{ type: string; data: Record<string, unknown> }> }>('GET', `/api/device/${deviceId}/events?limit=50`)).body
      .events
  /** Waits until the device's newest presence event is `type` (with `reason`), newer than `count` presence events. */
  const presence = (deviceId: string, type: string, count: number, reason?: string) =>
    eventually(async () => {
      const all = (await events(deviceId)).filter((e) => e.type === 'device.connected' || e.type === 'device.disconnected')
      const last = all[0]
      return all.length > count && last?.type === type && (reason === undefined || last.data.reason === reason) ? all : null
    })

  t.test('the hook answers RabbitMQ only', async (t) => {
    const form = new URLSearchParams({ username: 'x', password: 'y', client_id: 'x' }).toString()
    const call = (authorization?: string) =>
      appFetch(`${svc.url}/api/device/rabbitmq/user`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization ? { authorization } : {}) },
        body: form,
      })
    t.equal((await call()).status, 401, 'no credential: 401 before the body is read')
    t.equal((await call(`Basic ${Buffer.from('rabbitmq:wrong-secret').toString('base64')}`)).status, 401, 'a wrong secret')
    const ok = await call(`Basic ${Buffer.from(`rabbitmq:${SECRET}`).toString('base64')}`)
    t.equal(ok.status, 200)
    t.equal(await ok.text(), 'deny', 'plain text, as RabbitMQ reads it')
  })

  t.test('a paired device connects with its secret; a wrong secret is refused', async (t) => {
    const dev = await pairDevice(svc, token)
    const c = await asDevice(dev)
    t.equal(c.connected, true, 'the pairing credentials work on RabbitMQ’s MQTT listener')
    await c.endAsync()
    t.equal(await refused(asDevice(dev, { password: 'not-the-secret' })), true, 'a wrong secret is refused')
    await management.deleteUser(dev.deviceId)
    t.equal(
      await refused(asDevice(dev, { clientId: `${dev.deviceId}-2` })),
      true,
      'a client id other than the device id is refused (HTTP routes)',
    )
    const ghost = 'c0ffee00-0000-4000-8000-000000000000'
    t.equal(
      await refused(connect(RABBIT.mqttUrl, { clientId: ghost, username: ghost, password: 'x'.repeat(43) })),
      true,
      'an unknown device is refused',
    )
    t.equal(await refused(connect(RABBIT.mqttUrl, { clientId: 'anon' })), true, 'no anonymous logins')
  })

  t.test('a paired device is a RabbitMQ internal user: RabbitMQ admits it without asking the service', async (t) => {
    const dev = await pairDevice(svc, token)
    const other = await pairDevice(svc, token)
    t.equal(await management.hasUser(dev.deviceId), true, 'pairing made the device a user')
    hookCalls.clear()
    const c = await asDevice(dev)
    t.teardown(() => c.end(true))
    t.same(await subackCodes(c, [dev.topics.prompt!, 'fleet/cmd', `devices/${dev.deviceId}/#`], 1), [1, 1, 1], 'its own topics')
    const refusedCodes = await Promise.race([
      subackCodes(c, [`devices/${other.deviceId}/prompt`], 1),
      new Promise<number[]>((resolve) => c.once('close', () => resolve([0x80]))),
    ])
    t.same(refusedCodes, [0x80], 'another device’s topic is refused')
    t.same(Object.fromEntries(hookCalls), {}, 'no call to the service’s auth routes')
  })

  t.test('a device user that logs in with another device’s client id loses its user and its connection', async (t) => {
    const victim = await pairDevice(svc, token)
    const rogue = await pairDevice(svc, token)
    // RabbitMQ's internal backend does not see the client id: the login succeeds and takes over the client id.
    // The service may close it before its CONNACK reaches the client: closed either way.
    await asDevice(rogue, { clientId: victim.deviceId }).then(
      (taken) => (taken.connected ? new Promise<void>((resolve) => taken.once('close', () => resolve())) : undefined),
      () => undefined,
    )
    t.pass('the service closes that connection (from the event exchange)')
    await eventually(async () => ((await management.hasUser(rogue.deviceId)) ? null : true))
    t.pass('and deletes the device’s user')
    t.equal(await refused(asDevice(rogue, { clientId: victim.deviceId })), true, 'its next try goes to the HTTP routes, which refuse it')
    const back = await asDevice(victim)
    t.equal(back.connected, true, 'the other device connects again')
    await back.endAsync()
  })

  t.test('a device paired before is checked by the service once, then admitted by RabbitMQ', async (t) => {
    const dev = await pairDevice(svc, token)
    // As a device paired before RABBITMQ_DEVICE_USERS: no internal user.
    t.equal(await management.deleteUser(dev.deviceId), true)
    hookCalls.clear()
    const first = await asDevice(dev)
    await first.endAsync()
    t.equal(hookCalls.get('user'), 1, 'the first connect asks the HTTP routes')
    await eventually(async () => ((await management.hasUser(dev.deviceId)) ? true : null))
    t.pass('and the service made it a user')
    // The user exists before its password and permissions are set (the password last): until
    // then a connect still falls through to the HTTP routes. Once they are, no call at all.
    const calls = await eventually(async () => {
      hookCalls.clear()
      const again = await asDevice(dev)
      const codes = await subackCodes(again, [dev.topics.prompt!], 1)
      await again.endAsync()
      return codes[0] === 1 && hookCalls.size === 0 ? Object.fromEntries(hookCalls) : null
    })
    t.same(calls, {}, 'a later connect is RabbitMQ’s alone')
  })

  t.test('the ACL matrix: the embedded broker’s topic rights, decided on RabbitMQ’s routing keys', async (t) => {
    const dev = await pairDevice(svc, token)
    const other = await pairDevice(svc, token)
    // The service's own account sees everything that is published.
    const watcher = await connect(RABBIT.mqttUrl, {
      clientId: `watch-${dev.deviceId.slice(0, 8)}`,
      username: RABBIT.service.username,
      password: RABBIT.service.password,
    })
    t.teardown(() => watcher.endAsync())
    await watcher.subscribeAsync('#', { qos: 0 })
    for (const c of ACL_MATRIX(dev.deviceId, other.deviceId)) {
      const client = await asDevice(dev)
      if (c.action === 'subscribe') {
        const codes = await Promise.race([
          subackCodes(client, [c.topic], 1),
          new Promise<number[]>((resolve) => client.once('close', () => resolve([0x80]))),
        ])
        t.equal(codes[0] !== 0x80, c.allowed, `subscribe ${c.topic}: ${c.allowed ? 'allowed' : 'refused'}`)
      } else {
        const marker = randomBytes(6).toString('hex')
        const seen = new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), 1000)
          watcher.on('message', (_topic, payload) => {
            if (payload.toString().includes(marker)) {
              clearTimeout(timer)
              resolve(true)
            }
          })
        })
        client.publish(c.topic, JSON.stringify({ marker }), { qos: 0 })
        t.equal(await seen, c.allowed, `publish ${c.topic}: ${c.allowed ? 'delivered' : 'dropped'}`)
      }
      client.end(true)
    }
  })

  t.test('a prompt reaches the device through RabbitMQ; presence is recorded', async (t) => {
    const dev = await pairDevice(svc, token)
    const c = await asDevice(dev)
    await presence(dev.deviceId, 'device.connected', 0)
    t.pass('device.connected from the event exchange')
    await c.subscribeAsync(dev.topics.prompt!, { qos: 1 })
    const arrives = nextMessage<{ text: string }>(c, dev.topics.prompt!)
    t.equal((await api('POST', '/api/prompts', { text: 'a lighthouse at dusk', deviceId: dev.deviceId })).status, 201)
    t.equal((await arrives).payload.text, 'a lighthouse at dusk', 'the prompt arrives on devices/{id}/prompt')
    const shown = await api<{ isActive: boolean }>('GET', `/api/device/${dev.deviceId}`)
    t.equal(shown.body.isActive, true, 'the device is shown online')
    await c.endAsync()
    const all = await presence(dev.deviceId, 'device.disconnected', 1, 'client_disconnect')
    t.equal(all[0]?.data.broker, 'rabbitmq')
    t.equal((await api<{ isActive: boolean }>('GET', `/api/device/${dev.deviceId}`)).body.isActive, false, 'and offline')
  })

  t.test('disconnecting a device closes its RabbitMQ connection at once', async (t) => {
    const dev = await pairDevice(svc, token)
    const c = await asDevice(dev)
    await presence(dev.deviceId, 'device.connected', 0)
    const closed = new Promise<number>((resolve) => c.once('close', () => resolve(performance.now())))
    const start = performance.now()
    const res = await api('POST', '/api/device/disconnect', { deviceId: dev.deviceId })
    const answered = performance.now()
    t.equal(res.status, 200)
    const at = await closed
    t.comment(
      `revocation: connection closed ${(at - start).toFixed(1)} ms after the API call (its answer took ${(answered - start).toFixed(1)} ms)`,
    )
    await presence(dev.deviceId, 'device.disconnected', 1, 'kicked')
    t.pass('recorded as kicked')
    t.ok(at - start < 1000, 'within a second')
    t.equal(await refused(asDevice(dev)), true, 'and it cannot come back')
    t.equal(await management.hasUser(dev.deviceId), false, 'its RabbitMQ user is gone')

    const gone = await pairDevice(svc, token)
    const g = await asDevice(gone)
    const closedToo = new Promise<void>((resolve) => g.once('close', () => resolve()))
    t.equal((await api('DELETE', '/api/device/delete', { deviceId: gone.deviceId })).status, 200)
    await closedToo
    t.pass('deleting a device closes its connection too')
    t.equal(await management.hasUser(gone.deviceId), false, 'and deletes its RabbitMQ user')
    t.equal(await refused(asDevice(gone)), true, 'which cannot come back')
  })

  t.test('deleting an account closes its devices’ connections and deletes their RabbitMQ users at once', async (t) => {
    // The database deletes the devices with the account (a cascade), no revocation runs: without
    // the account's hook their users would admit them until the next sweep.
    const leaving = await signUp(makeClient(svc.url).client, uniqueEmail('leaving'))
    const dev = await pairDevice(svc, leaving.token)
    t.equal(await management.hasUser(dev.deviceId), true, 'pairing made the device a user')
    const c = await asDevice(dev)
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()))
    const admin = await signUpAdmin(svc, ADMIN_EMAIL)
    const res = await appFetch(`${svc.url}/api/auth/admin/remove-user`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: leaving.userId }),
    })
    t.equal(res.status, 200, 'the admin removed the account')
    t.equal(await management.hasUser(dev.deviceId), false, 'its device’s RabbitMQ user is gone when the removal answers')
    await closed
    t.pass('its connection is closed')
    t.equal(await refused(asDevice(dev)), true, 'and it cannot come back')
  })

  t.test('what a device missed comes through the outbox when it starts a session RabbitMQ has no state for', async (t) => {
    const dev = await pairDevice(svc, token)
    // Sent while the device is away and RabbitMQ holds no session for it: RabbitMQ drops it (no
    // queue), as a node that never saw the device would. The outbox keeps it.
    const first = await api<{ id: string }>('POST', '/api/prompts', { text: 'missed while away', deviceId: dev.deviceId })
    t.equal(first.status, 201)
    const missed = await api<{ commandId: string }>('POST', `/api/device/${dev.deviceId}/command`, { command: 'identify' })
    t.equal(missed.status, 202)

    const c = await asDevice(dev)
    t.teardown(() => c.endAsync())
    await c.subscribeAsync([dev.topics.prompt!, dev.topics.cmd!], { qos: 1 })
    const got: Array<{ topic: string; payload: { seq: number; text?: string; commandId?: string } }> = []
    c.on('message', (topic, payload) => got.push({ topic, payload: JSON.parse(payload.toString()) }))
    await c.publishAsync(dev.topics.status!, JSON.stringify({ battery: 80, configVersion: 1, sessionPresent: false }), { qos: 1 })
    await eventually(async () => (got.length >= 2 ? got : null))
    const prompt = got.find((m) => m.topic === dev.topics.prompt)
    const command = got.find((m) => m.topic === dev.topics.cmd)
    t.equal(prompt?.payload.text, 'missed while away', 'the prompt sent while it was away arrives')
    t.equal(command?.payload.commandId, missed.body.commandId, 'and the command')
    t.ok(prompt!.payload.seq < command!.payload.seq, 'in the order they were sent')

    const pending = async () =>
      (await api<{ messages: Array<{ seq: number; status: string }> }>('GET', `/api/device/${dev.deviceId}/downlink`)).body.messages
        .filter((m) => m.status === 'pending')
        .map((m) => m.seq)
    t.ok((await pending()).includes(prompt!.payload.seq), 'RabbitMQ’s PUBACK to the service marks nothing delivered')
    for (const m of [prompt!, command!]) await c.publishAsync(dev.topics.ack!, JSON.stringify({ seq: m.payload.seq }), { qos: 1 })
    const seqs = [prompt!.payload.seq, command!.payload.seq]
    await eventually(async () => ((await pending()).some((s) => seqs.includes(s)) ? null : true))
    t.pass('the device’s up/ack with each seq marks them delivered')

    // A later new session gets nothing again.
    const before = got.length
    await c.publishAsync(dev.topics.status!, JSON.stringify({ battery: 80, configVersion: 1, sessionPresent: false }), { qos: 1 })
    const marker = await api('POST', '/api/prompts', { text: 'only this one', deviceId: dev.deviceId })
    t.equal(marker.status, 201)
    await eventually(async () => (got.some((m) => m.payload.text === 'only this one') ? true : null))
    // QoS 1 may bring the new, unacknowledged marker twice (the outbox resends it when the
    // device's up/ack is slow under load); what was acknowledged must not come at all.
    t.same(
      [...new Set(got.slice(before).map((m) => m.payload.text ?? m.payload.commandId))],
      ['only this one'],
      'what was acknowledged is not sent again',
    )
  })

  t.test('a device reconnects after the service restarts', async (t) => {
    const dev = await pairDevice(svc, token)
    // Deleted in the database alone, as a deleted account's devices are: no revocation reaches RabbitMQ.
    const orphan = await pairDevice(svc, token)
    await deleteDeviceRows(svc.app.database.db, orphan.deviceId)
    t.equal(await management.hasUser(orphan.deviceId), true)
    const c = await asDevice(dev)
    await presence(dev.deviceId, 'device.connected', 0)
    await svc.close()
    // RabbitMQ holds the session while the service is away; the device disconnects meanwhile.
    await c.endAsync()
    svc = await startApp(t, { env, reuse: { dataDir: svc.dataDir, databaseUrl: svc.config.databaseUrl } })
    await presence(dev.deviceId, 'device.disconnected', 1, 'client_disconnect')
    t.pass('the disconnect queued on RabbitMQ while the service was down is recorded after its restart')
    await eventually(async () => ((await management.hasUser(orphan.deviceId)) ? null : true))
    t.pass('the sweep at start deleted the RabbitMQ user of the device deleted in the database alone')
    t.equal(await refused(asDevice(orphan)), true, 'which cannot connect')
    const again = await asDevice(dev)
    t.teardown(() => again.endAsync())
    await presence(dev.deviceId, 'device.connected', 2)
    await again.subscribeAsync(dev.topics.prompt!, { qos: 1 })
    const arrives = nextMessage<{ text: string }>(again, dev.topics.prompt!)
    t.equal((await api('POST', '/api/prompts', { text: 'after the restart', deviceId: dev.deviceId })).status, 201)
    t.equal((await arrives).payload.text, 'after the restart', 'and gets what the restarted service sends')
  })
})
