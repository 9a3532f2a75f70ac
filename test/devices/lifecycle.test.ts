// What the rest of the device module's lifecycle promises: a code is locked after 5 refused
// claims across all accounts; both codes must name the same device; the compare-and-set lets
// exactly one of many claims win; delete removes what hangs off a device and leaves nothing
// behind; lists and event logs page without skipping rows; the attempt counters' windows.
import { randomUUID } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { jsonCall, type CallOptions, type Json, type Res } from '../helpers/http.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { close, connect, eventually, mqttUrl } from '../helpers/mqtt.js'
import { pairDevice } from '../helpers/devices.js'
import { device, deviceCommand, deviceInit } from '../../src/devices/tables.js'
import { transitionDeviceInit } from '../../src/devices/repository.js'
import { event } from '../../src/events/tables.js'
import { prompt } from '../../src/prompts/tables.js'
import { generationJob } from '../../src/generation/tables.js'
import { image } from '../../src/images/tables.js'
import { memoryCounters, redisCounters, type Counters } from '../../src/http/counters.js'
import { appFetch } from '../helpers/app-fetch.js'

type Tap = Pick<typeof t, 'equal' | 'type' | 'ok' | 'match' | 'same' | 'not'>

let svc: TestApp

t.before(async () => {
  svc = await startApp(t, {
    env: { DEVICE_POLL_INTERVAL: '0', LOCAL_PROVIDER_DURATION_MS: '100', GENERATION_TICK_MS: '50', GENERATION_POLL_BASE_MS: '50' },
  })
})

const api = (path: string, opts: CallOptions = {}) => jsonCall(svc.url, path, opts)

function errorBody(t: Tap, res: Res, status: number, code: string, what: string) {
  t.equal(res.status, status, `${what}: status ${status}`)
  t.type(res.body?.message, 'string', `${what}: has a message`)
  t.equal(res.body?.code, code, `${what}: code ${code}`)
}

async function person(prefix: string) {
  const { client } = makeClient(svc.url)
  const { token, userId } = await signUp(client, uniqueEmail(prefix), 'correct-horse-battery', `${prefix} person`)
  return { token, id: userId }
}

async function initDevice() {
  const res = await api('/api/device/init', { body: { display: { width: 800, height: 480, palette: 'bw' }, model: 'lifecycle-frame' } })
  if (res.status !== 200) throw new Error(`init failed: ${res.status}`)
  return res.body as { deviceId: string; deviceCode: string; userCode: string; pinCode: string }
}

t.test('a code is locked after 5 refused claims, whichever accounts made them', async (t) => {
  const owner = await person('org-owner')
  const org = await api('/api/auth/organization/create', { token: owner.token, body: { name: 'Lock Org', slug: `lock-${Date.now()}` } })
  t.equal(org.status, 200)
  const codes = await initDevice()
  // Five different people, each within their own budget, name the code for an organization they cannot add to.
  for (let i = 0; i < 5; i++) {
    const stranger = await person(`stranger${i}`)
    const res = await api('/api/device/validate', {
      token: stranger.token,
      body: { pinCode: codes.pinCode, name: 'Mine', organizationId: org.body.id },
    })
    errorBody(t, res, 403, 'FORBIDDEN', `refused claim ${i + 1}`)
  }
  const locked = await api('/api/device/validate', {
    token: owner.token,
    body: { pinCode: codes.pinCode, name: 'Lobby', organizationId: org.body.id },
  })
  errorBody(t, locked, 429, 'TOO_MANY_ATTEMPTS', 'the code is locked, even for someone allowed')
  const retry = Number(locked.headers.get('retry-after'))
  t.ok(retry > 800 && retry <= 900, `Retry-After is the time left in the 15-minute window (${retry} s)`)
  errorBody(
    t,
    await api('/api/device/validate', { token: owner.token, body: { userCode: codes.userCode, name: 'Lobby' } }),
    429,
    'TOO_MANY_ATTEMPTS',
    'by userCode too',
  )
  const [rec] = await svc.app.database.db.select().from(deviceInit).where(eq(deviceInit.id, codes.deviceId))
  t.equal(rec?.status, 'pending', 'the record itself is untouched')
  t.equal(rec?.failedAttempts, 5, 'and keeps the count of refused claims')

  // A code nobody attacked is not affected.
  const other = await initDevice()
  t.equal(
    (
      await api('/api/device/validate', {
        token: owner.token,
        body: { pinCode: other.pinCode, name: 'Lobby', organizationId: org.body.id },
      })
    ).status,
    200,
  )
})

t.test('pinCode and userCode together must name the same device', async (t) => {
  const user = await person('both')
  const a = await initDevice()
  const b = await initDevice()
  errorBody(
    t,
    await api('/api/device/validate', { token: user.token, body: { userCode: a.userCode, pinCode: b.pinCode, name: 'Mixed' } }),
    404,
    'INVALID_CODE',
    "a's userCode with b's pin",
  )
  t.equal(
    (await svc.app.database.db.select().from(deviceInit).where(eq(deviceInit.id, a.deviceId)))[0]?.status,
    'pending',
    'nothing was claimed',
  )
  const ok = await api('/api/device/validate', {
    token: user.token,
    body: { userCode: a.userCode, pinCode: a.pinCode.toLowerCase().replace('-', ''), name: 'Matched' },
  })
  t.equal(ok.status, 200, 'both codes of one device')
  t.equal(ok.body.device.id, a.deviceId)
})

t.test('the per-user budget holds under parallel guesses', async (t) => {
  const guesser = await person('parallel')
  const results = await Promise.all(
    Array.from({ length: 20 }, () => api('/api/device/validate', { token: guesser.token, body: { pinCode: 'BBBB-BBBB', name: 'x' } })),
  )
  const statuses = results.map((r) => r.status)
  t.equal(statuses.filter((s) => s === 404).length, 5, 'exactly five guesses were looked up')
  t.equal(statuses.filter((s) => s === 429).length, 15, 'the rest were refused')
  // Right codes, even many at once, do not use any of it.
  const careful = await person('careful')
  const codes = await Promise.all(Array.from({ length: 12 }, () => initDevice()))
  const claims = await Promise.all(
    codes.map((c, i) => api('/api/device/validate', { token: careful.token, body: { pinCode: c.pinCode, name: `ok ${i}` } })),
  )
  t.same(
    claims.map((r) => r.status),
    codes.map(() => 200),
    'twelve right codes at once all succeed',
  )
  for (let i = 0; i < 5; i++)
    t.equal(
      (await api('/api/device/validate', { token: careful.token, body: { pinCode: 'CCCC-CCCC', name: 'x' } })).status,
      404,
      `wrong guess ${i + 1} of 5`,
    )
  t.equal(
    (await api('/api/device/validate', { token: careful.token, body: { pinCode: 'CCCC-CCCC', name: 'x' } })).status,
    429,
    'the sixth failure is refused',
  )
})

t.test('the compare-and-set: of eight claims at once, exactly one wins', async (t) => {
  const people = await Promise.all(Array.from({ length: 8 }, (_, i) => person(`racer${i}`)))
  for (let round = 0; round < 2; round++) {
    const codes = await initDevice()
    const results = await Promise.all(
      people.map((p, i) => api('/api/device/validate', { token: p.token, body: { userCode: codes.userCode, name: `Racer ${i}` } })),
    )
    t.equal(results.filter((r) => r.status === 200).length, 1, `round ${round + 1}: one winner`)
    t.equal(results.filter((r) => r.status === 409).length, 7, 'seven 409s')
    const events = await svc.app.database.db.select().from(event).where(eq(event.deviceId, codes.deviceId))
    t.equal(events.filter((e) => e.type === 'device.paired').length, 1, 'one device.paired event')
  }
  // The repository's transition on its own: every concurrent caller but one sees null.
  const codes = await initDevice()
  const db = svc.app.database.db
  const outcomes = await Promise.all(
    Array.from({ length: 6 }, () =>
      db.transaction((tx) => transitionDeviceInit(tx, codes.deviceId, ['pending'], 'denied', { decidedAt: new Date() })),
    ),
  )
  t.equal(outcomes.filter(Boolean).length, 1, 'one transition from pending')
})

t.test('delete removes what hangs off a device and leaves no event behind', async (t) => {
  const owner = await person('deleter')
  const paired = await pairDevice(svc, owner.token, { name: 'Doomed' })
  const mqtt = await connect(mqttUrl(svc), {
    clientId: paired.clientId,
    username: paired.deviceId,
    password: paired.password,
    clean: false,
  })
  t.teardown(() => close(mqtt))
  let closed = false
  mqtt.on('close', () => (closed = true))
  const created = await api('/api/prompts', { token: owner.token, body: { text: 'a doomed lighthouse', deviceId: paired.deviceId } })
  t.equal(created.status, 201)
  t.equal((await api(`/api/device/${paired.deviceId}/command`, { token: owner.token, body: { command: 'identify' } })).status, 202)
  const job = await api('/api/generate', { token: owner.token, body: { promptId: created.body.id, deviceId: paired.deviceId } })
  t.equal(job.status, 202)
  await eventually(async () => (await api(`/api/generate/${job.body.id}`, { token: owner.token })).body.status === 'succeeded', 20_000)
  const db = svc.app.database.db
  t.ok((await db.select().from(image).where(eq(image.deviceId, paired.deviceId))).length > 0, 'the device has an image')

  const jwt = (
    (await (await appFetch(`${svc.url}/api/auth/token`, { headers: { authorization: `Bearer ${owner.token}` } })).json()) as {
      token: string
    }
  ).token
  const del = await api('/api/device/delete', { method: 'DELETE', token: jwt, body: { deviceId: paired.deviceId } })
  t.equal(del.status, 200)
  t.equal(del.body.device.id, paired.deviceId)
  // Give a late presence write every chance to land.
  await new Promise((r) => setTimeout(r, 300))
  t.same(await db.select().from(device).where(eq(device.id, paired.deviceId)), [], 'the device row is gone')
  t.same(await db.select().from(deviceInit).where(eq(deviceInit.id, paired.deviceId)), [], 'its initialisation record too')
  t.same(
    await db.select().from(event).where(eq(event.deviceId, paired.deviceId)),
    [],
    'no event of the device remains, not even its disconnect',
  )
  t.same(await db.select().from(prompt).where(eq(prompt.deviceId, paired.deviceId)), [], 'its prompts are deleted')
  t.same(await db.select().from(deviceCommand).where(eq(deviceCommand.deviceId, paired.deviceId)), [], 'its commands are deleted')
  t.same(await db.select().from(generationJob).where(eq(generationJob.deviceId, paired.deviceId)), [], 'no job points at it')
  t.same(await db.select().from(image).where(eq(image.deviceId, paired.deviceId)), [], 'no image points at it')
  const [kept] = await db.select().from(generationJob).where(eq(generationJob.id, job.body.id))
  t.equal(kept?.deviceId, null, "the owner's job stays, detached")
  t.equal((await api(`/api/generate/${job.body.id}`, { token: owner.token })).status, 200, 'and can still be read')
  t.ok(closed, 'the live session was ended')
})

t.test('device lists page without skipping rows, by organization and with a JWT', async (t) => {
  const owner = await person('lister')
  for (let i = 0; i < 5; i++) await pairDevice(svc, owner.token, { name: `Frame ${i}` })
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res: Res = await api(`/api/device?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: owner.token })
    t.equal(res.status, 200)
    t.ok(res.body.devices.length <= 2)
    seen.push(...res.body.devices.map((d: Json) => d.name))
    cursor = res.body.nextCursor
  } while (cursor)
  t.same(seen, ['Frame 4', 'Frame 3', 'Frame 2', 'Frame 1', 'Frame 0'], 'every device once, newest first')

  const org = await api('/api/auth/organization/create', { token: owner.token, body: { name: 'List Org', slug: `list-${Date.now()}` } })
  await pairDevice(svc, owner.token, { name: 'Org frame', organizationId: org.body.id })
  const jwt = (
    (await (await appFetch(`${svc.url}/api/auth/token`, { headers: { authorization: `Bearer ${owner.token}` } })).json()) as {
      token: string
    }
  ).token
  const viaJwt = await api(`/api/device?organizationId=${org.body.id}`, { token: jwt })
  t.equal(viaJwt.status, 200)
  t.ok(
    viaJwt.body.devices.some((d: Json) => d.name === 'Org frame'),
    'a JWT caller names the organization',
  )
  const stranger = await person('not-member')
  errorBody(t, await api(`/api/device?organizationId=${org.body.id}`, { token: stranger.token }), 403, 'FORBIDDEN', 'not a member')
  errorBody(t, await api('/api/device?limit=0', { token: owner.token }), 400, 'VALIDATION_ERROR', 'limit 0')
  errorBody(t, await api('/api/device?cursor=bm9wZQ', { token: owner.token }), 400, 'INVALID_CURSOR', 'a made-up cursor')
})

t.test('event pages never skip events recorded in the same millisecond', async (t) => {
  const owner = await person('events')
  const paired = await pairDevice(svc, owner.token, { name: 'Busy' })
  const db = svc.app.database.db
  // Four events within one millisecond (as a connect storm writes them), microseconds apart.
  for (const [i, at] of [
    '2030-01-01T00:00:00.000100Z',
    '2030-01-01T00:00:00.000300Z',
    '2030-01-01T00:00:00.000600Z',
    '2030-01-01T00:00:00.000900Z',
  ].entries()) {
    await db.execute(
      sql`insert into ${event} (id, type, device_id, user_id, data, created_at) values (${`e-${i}-${randomUUID()}`}, ${'test.burst'}, ${paired.deviceId}, ${owner.id}, ${JSON.stringify({ i })}::jsonb, ${at}::timestamptz)`,
    )
  }
  const all = await api(`/api/device/${paired.deviceId}/events?limit=100`, { token: owner.token })
  const walked: string[] = []
  let cursor: string | null = null
  do {
    const res: Res = await api(`/api/device/${paired.deviceId}/events?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { token: owner.token })
    walked.push(...res.body.events.map((e: Json) => e.id))
    cursor = res.body.nextCursor
  } while (cursor)
  t.equal(all.body.events.filter((e: Json) => e.type === 'test.burst').length, 4)
  t.same(
    walked,
    all.body.events.map((e: Json) => e.id),
    'one at a time gives the same events as one page',
  )
  // Cursors JavaScript would accept but PostgreSQL would not are refused as ours never are.
  for (const at of ['+275760-09-13T00:00:00.000Z', '-000001-01-01T00:00:00.000Z', '2030-01-01']) {
    const forged = Buffer.from(`${at}|x`).toString('base64url')
    errorBody(
      t,
      await api(`/api/device/${paired.deviceId}/events?cursor=${forged}`, { token: owner.token }),
      400,
      'INVALID_CURSOR',
      `cursor at ${at}`,
    )
  }
})

async function counterSuite(t: Tap & { test: typeof import('tap').test }, counters: Counters, key: string) {
  t.equal(await counters.get(key), 0, 'nothing counted yet')
  t.equal(await counters.secondsLeft(key), 0, 'no window yet')
  t.equal(await counters.hit(key, 1), 1)
  t.equal(await counters.hit(key, 1), 2)
  t.equal(await counters.get(key), 2)
  t.equal(await counters.secondsLeft(key), 1, 'the window has a second left')
  await new Promise((r) => setTimeout(r, 1200))
  t.equal(await counters.get(key), 0, 'the window ended and the count with it')
}

t.test('attempt counters: in memory, and in Redis when configured', async (t) => {
  await counterSuite(t as never, memoryCounters(), `k-${randomUUID()}`)
  if (svc.app.redis) await counterSuite(t as never, redisCounters(svc.app.redis), `k-${randomUUID()}`)
})
