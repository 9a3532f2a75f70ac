// Playlists and a device's day plan through the real app, with the scheduler's clock moved by the
// test: rotation in order, what a device gets on its topics (image, then the config with the next
// change), nothing while asleep, only the current item after downtime or sleep, a manual send
// that wins until the next change, a restart in the middle of a rotation, and the bad input that
// is refused naming the field.
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { jsonCall } from '../helpers/http.js'
import { close, connect, eventually, mqttUrl, subscribe } from '../helpers/mqtt.js'
import { uploadPng } from '../helpers/uploads.js'
import { claimDueSchedules, finishTurns, findSchedule } from '../../src/schedules/repository.js'

type Msg = { kind: string; payload: Record<string, unknown> }

/** A device connected with a persistent session that records every message on its topics. */
async function listen(svc: TestApp, dev: PairedDevice) {
  const c: MqttClient = await connect(mqttUrl(svc), {
    clientId: dev.clientId,
    username: dev.deviceId,
    password: dev.password,
    clean: false,
  })
  const got: Msg[] = []
  c.on('message', (topic, payload) => {
    const kind = topic.split('/')[2]!
    if (kind === 'image' || kind === 'config') got.push({ kind, payload: JSON.parse(payload.toString()) })
  })
  await subscribe(c, `devices/${dev.deviceId}/+`)
  return { c, got }
}

let now = Date.parse('2026-06-01T07:59:00Z')
const clock = () => new Date(now)
const setClock = (iso: string) => {
  now = Date.parse(iso)
}

t.test('a playlist rotates on a device by the day plan, sleeps at night and never replays what it missed', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('sched'))
  const dev = await pairDevice(svc, token, { palette: 'bw', width: 400, height: 300 })
  const { c, got } = await listen(svc, dev)
  t.teardown(() => close(c))
  const tick = () => svc.app.scheduler!.tick()

  const keys = [
    await uploadPng(svc.url, token, { r: 250, g: 250, b: 250 }),
    await uploadPng(svc.url, token, { r: 10, g: 10, b: 10 }),
    await uploadPng(svc.url, token, { r: 120, g: 120, b: 120 }),
  ]
  const created = await call('/api/playlists', {
    body: { name: 'Hallway', mode: 'sequential', itemSeconds: 600, items: keys.map((key) => ({ kind: 'upload', key })) },
  })
  t.equal(created.status, 201)
  const list = created.body
  t.same(
    list.items.map((i: { key: string }) => i.key),
    keys,
  )

  const put = await call(`/api/device/${dev.deviceId}/schedule`, {
    method: 'PUT',
    body: {
      timeZone: 'UTC',
      rules: [{ playlistId: list.id, days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], from: '08:00', to: '09:00' }],
      sleep: [{ from: '22:00', to: '06:00' }],
    },
  })
  t.equal(put.status, 200)
  t.match(put.body, { now: { state: 'idle' }, nextChangeAt: '2026-06-01T08:00:00.000Z' })

  const images = () => got.filter((m) => m.kind === 'image').map((m) => m.payload.imageId as string)
  const lastConfig = () => got.filter((m) => m.kind === 'config').at(-1)?.payload as { schedule?: Record<string, unknown> } | undefined
  await tick()
  await eventually(async () => lastConfig()?.schedule?.nextChangeAt === '2026-06-01T08:00:00.000Z')
  t.same(
    lastConfig()!.schedule,
    { timeZone: 'UTC', sleep: [{ from: '22:00', to: '06:00' }], nextChangeAt: '2026-06-01T08:00:00.000Z', sleepingUntil: null },
    'the config says when the first change is',
  )
  t.equal(images().length, 0, 'nothing plays before the window')

  // Three turns, then round again: the first upload's converted image is reused.
  const shown: string[] = []
  for (const at of ['08:00', '08:10', '08:20', '08:30']) {
    setClock(`2026-06-01T${at}:00Z`)
    await tick()
    await eventually(async () => images().length === shown.length + 1)
    shown.push(images().at(-1)!)
  }
  t.equal(new Set(shown.slice(0, 3)).size, 3, 'three items, three images')
  t.equal(shown[3], shown[0], 'round again from the first, converted once')
  await eventually(async () => lastConfig()?.schedule?.nextChangeAt === '2026-06-01T08:40:00.000Z')
  const schedule = await call(`/api/device/${dev.deviceId}/schedule`)
  t.match(schedule.body, {
    now: { state: 'playing', playlistId: list.id, itemId: list.items[0].id },
    nextChangeAt: '2026-06-01T08:40:00.000Z',
  })

  // A manual send wins until the next scheduled change.
  setClock('2026-06-01T08:33:00Z')
  const manual = await call('/api/upload/send', { body: { key: keys[1], deviceId: dev.deviceId } })
  t.equal(manual.status, 200)
  await eventually(async () => images().length === 5)
  setClock('2026-06-01T08:39:00Z')
  await tick()
  t.equal(images().length, 5, 'the scheduler leaves it until 08:40')

  // Downtime: 08:40 and 08:50 are missed; at 08:55 only the current turn (slot 5: the third item) is sent.
  setClock('2026-06-01T08:55:00Z')
  await tick()
  await eventually(async () => images().length === 6)
  t.equal(images()[5], shown[2], 'the current item, not the backlog')

  // A restart in the middle of the rotation sends nothing twice, and goes on at the next change.
  await svc.app.close()
  const again = await startApp(t, {
    clock,
    env: { DEVICE_POLL_INTERVAL: '0' },
    reuse: { dataDir: svc.dataDir, databaseUrl: svc.config.databaseUrl, redisPrefix: svc.config.redisPrefix },
  })
  const { c: c2, got: got2 } = await listen(again, dev)
  t.teardown(() => close(c2))
  await again.app.scheduler!.tick()
  setClock('2026-06-01T08:58:00Z')
  await again.app.scheduler!.tick()
  t.equal(got2.filter((m) => m.kind === 'image').length, 0, 'after the restart: nothing resent inside the same turn')

  // The window ends at 09:00 (idle until tomorrow 08:00); sleep from 22:00 says until when, sends nothing.
  setClock('2026-06-01T22:00:00Z')
  await again.app.scheduler!.tick()
  await eventually(async () => {
    const cfg = got2.filter((m) => m.kind === 'config').at(-1)?.payload as { schedule?: { sleepingUntil?: string } } | undefined
    return cfg?.schedule?.sleepingUntil === '2026-06-02T06:00:00.000Z'
  })
  t.pass('asleep until 06:00, said in the retained config')
  setClock('2026-06-02T03:00:00Z')
  await again.app.scheduler!.tick()
  t.equal(got2.filter((m) => m.kind === 'image').length, 0, 'nothing inside the sleep window')
  // Waking at 08:25, long after 06:00 and after the window opened: only what shows now (slot 2).
  setClock('2026-06-02T08:25:00Z')
  await again.app.scheduler!.tick()
  await eventually(async () => got2.filter((m) => m.kind === 'image').length === 1)
  t.equal(got2.filter((m) => m.kind === 'image')[0]!.payload.imageId, shown[2], 'the current item only')
  const events = await jsonCall(again.url, `/api/device/${dev.deviceId}/events?limit=100`, { token })
  const scheduled = (events.body.events as Array<{ type: string; data: { scheduled?: unknown } }>).filter(
    (e) => e.type === 'device.image' && e.data.scheduled,
  )
  t.equal(scheduled.length, 6, 'six scheduled sends in all, each an event')
})

t.test('playlists and schedules refuse bad input naming the field, and what the caller may not see is 404', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('sched-bad'))
  const other = await signUp(makeClient(svc.url).client, uniqueEmail('sched-other'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const dev = await pairDevice(svc, token)
  const key = await uploadPng(svc.url, token, { r: 1, g: 2, b: 3 })
  const theirKey = await uploadPng(svc.url, other.token, { r: 3, g: 2, b: 1 })

  const short = await call('/api/playlists', { body: { name: 'Fast', mode: 'sequential', itemSeconds: 30 } })
  t.equal(short.status, 400)
  t.match(short.body, { code: 'VALIDATION_ERROR', message: /itemSeconds: at least 60/ })
  const mode = await call('/api/playlists', { body: { name: 'x', mode: 'random', itemSeconds: 60 } })
  t.equal(mode.status, 400)
  t.match(mode.body.message, /mode/)

  // One item the caller may not see: 404 naming it, and no playlist is left behind.
  const before = (await call('/api/playlists')).body.playlists.length
  const theirs = await call('/api/playlists', {
    body: {
      name: 'Mixed',
      mode: 'sequential',
      itemSeconds: 60,
      items: [
        { kind: 'upload', key },
        { kind: 'upload', key: theirKey },
      ],
    },
  })
  t.equal(theirs.status, 404)
  t.match(theirs.body.message, /items\[1\]\.key/)
  t.equal((await call('/api/playlists')).body.playlists.length, before, 'nothing half-saved')
  t.equal(
    (await call('/api/playlists', { body: { name: 'x', mode: 'shuffle', itemSeconds: 60, items: [{ kind: 'image', imageId: 'nope' }] } }))
      .status,
    404,
  )
  t.equal(
    (await call('/api/playlists', { body: { name: 'x', mode: 'shuffle', itemSeconds: 60, items: [{ kind: 'prompt', promptId: 'nope' }] } }))
      .status,
    404,
  )

  const empty = (await call('/api/playlists', { body: { name: 'Empty', mode: 'sequential', itemSeconds: 60 } })).body
  const full = (await call('/api/playlists', { body: { name: 'One', mode: 'shuffle', itemSeconds: 60, items: [{ kind: 'upload', key }] } }))
    .body
  const theirList = (
    await jsonCall(svc.url, '/api/playlists', { token: other.token, body: { name: 'Theirs', mode: 'sequential', itemSeconds: 60 } })
  ).body
  t.equal((await call(`/api/playlists/${theirList.id}`)).status, 404, "another user's playlist does not exist for the caller")
  t.equal((await call(`/api/playlists/${theirList.id}`, { method: 'DELETE' })).status, 404)

  const rule = { playlistId: full.id, days: ['mon'], from: '08:00', to: '09:00' }
  const put = (body: unknown) => call(`/api/device/${dev.deviceId}/schedule`, { method: 'PUT', body })
  const cases: Array<[string, unknown, number, RegExp]> = [
    ['unknown time zone', { timeZone: 'Mars/Olympus', rules: [rule], sleep: [] }, 400, /^timeZone: /],
    ['from equal to to', { timeZone: 'UTC', rules: [{ ...rule, to: '08:00' }], sleep: [] }, 400, /^rules\[0\]\.to: equals from/],
    ['a sleep window of no length', { timeZone: 'UTC', rules: [], sleep: [{ from: '23:00', to: '23:00' }] }, 400, /^sleep\[0\]\.to/],
    [
      'an empty playlist',
      { timeZone: 'UTC', rules: [{ ...rule, playlistId: empty.id }], sleep: [] },
      400,
      /^rules\[0\]\.playlistId: the playlist "Empty" has no items/,
    ],
    [
      'overlapping rules',
      { timeZone: 'UTC', rules: [rule, { ...rule, from: '08:30', to: '10:00' }], sleep: [] },
      400,
      /^rules\[1\]: overlaps rules\[0\] on mon/,
    ],
    [
      "another user's playlist",
      { timeZone: 'UTC', rules: [{ ...rule, playlistId: theirList.id }], sleep: [] },
      404,
      /^rules\[0\]\.playlistId: no such playlist/,
    ],
    ['a time that is not HH:MM', { timeZone: 'UTC', rules: [{ ...rule, from: '8am' }], sleep: [] }, 400, /from/],
    ['an unknown day', { timeZone: 'UTC', rules: [{ ...rule, days: ['someday'] }], sleep: [] }, 400, /days/],
  ]
  for (const [what, body, status, message] of cases) {
    const res = await put(body)
    t.equal(res.status, status, `${what}: ${status}`)
    t.match(res.body, { code: String, message }, `${what}: says which field`)
  }
  t.equal((await call(`/api/device/${dev.deviceId}/schedule`)).status, 404, 'nothing was saved by the refused plans')
  t.equal(
    (
      await jsonCall(svc.url, `/api/device/${dev.deviceId}/schedule`, {
        token: other.token,
        method: 'PUT',
        body: { timeZone: 'UTC', rules: [], sleep: [] },
      })
    ).status,
    404,
    "another user's device",
  )

  // Another organization's playlist on a personal frame: refused, naming the field.
  const org = await jsonCall(svc.url, '/api/auth/organization/create', { token, body: { name: 'Club', slug: `club-${Date.now()}` } })
  t.equal(org.status, 200)
  const orgList = (
    await call('/api/playlists', {
      body: { name: 'Club photos', mode: 'sequential', itemSeconds: 60, organizationId: org.body.id, items: [{ kind: 'upload', key }] },
    })
  ).body
  const foreign = await put({ timeZone: 'UTC', rules: [{ ...rule, playlistId: orgList.id }], sleep: [] })
  t.equal(foreign.status, 400)
  t.match(foreign.body.message, /^rules\[0\]\.playlistId: the playlist "Club photos" is neither yours nor this frame's organization's/)

  t.equal((await put({ timeZone: 'Europe/Berlin', rules: [rule], sleep: [] })).status, 200)
  const inUse = await call(`/api/playlists/${full.id}`, { method: 'DELETE' })
  t.equal(inUse.status, 409)
  t.equal(inUse.body.code, 'PLAYLIST_IN_USE')
  t.equal((await call(`/api/device/${dev.deviceId}/schedule`, { method: 'DELETE' })).status, 204)
  t.equal((await call(`/api/playlists/${full.id}`, { method: 'DELETE' })).status, 204, 'deletable once no schedule names it')
})

t.test('items are added, removed and reordered; at most 500', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  const { client } = makeClient(svc.url)
  const { token } = await signUp(client, uniqueEmail('sched-items'))
  const call = (path: string, opts: Parameters<typeof jsonCall>[2] = {}) => jsonCall(svc.url, path, { token, ...opts })
  const keys = [await uploadPng(svc.url, token, { r: 9, g: 9, b: 9 }), await uploadPng(svc.url, token, { r: 99, g: 99, b: 99 })]
  const p = (
    await call('/api/playlists', { body: { name: 'Edit', mode: 'sequential', itemSeconds: 60, items: [{ kind: 'upload', key: keys[0] }] } })
  ).body
  const added = await call(`/api/playlists/${p.id}/items`, { body: { item: { kind: 'upload', key: keys[1] }, position: 0 } })
  t.equal(added.status, 201)
  t.same(
    added.body.items.map((i: { key: string; position: number }) => [i.key, i.position]),
    [
      [keys[1], 0],
      [keys[0], 1],
    ],
    'inserted first',
  )
  const ids = added.body.items.map((i: { id: string }) => i.id)
  const reordered = await call(`/api/playlists/${p.id}/order`, { method: 'PUT', body: { itemIds: [...ids].reverse() } })
  t.same(
    reordered.body.items.map((i: { key: string }) => i.key),
    keys,
  )
  t.equal(
    (await call(`/api/playlists/${p.id}/order`, { method: 'PUT', body: { itemIds: [ids[0]] } })).status,
    400,
    'an order must name every item',
  )
  t.equal((await call(`/api/playlists/${p.id}/order`, { method: 'PUT', body: { itemIds: [ids[0], ids[0]] } })).status, 400)
  const removed = await call(`/api/playlists/${p.id}/items/${ids[1]}`, { method: 'DELETE' })
  t.same(
    removed.body.items.map((i: { key: string; position: number }) => [i.key, i.position]),
    [[keys[1], 0]],
  )
  t.equal((await call(`/api/playlists/${p.id}/items/${ids[1]}`, { method: 'DELETE' })).status, 404)
  t.equal((await call(`/api/playlists/${p.id}`, { method: 'PATCH', body: { name: 'Renamed', mode: 'shuffle' } })).body.name, 'Renamed')

  const big = await call('/api/playlists', {
    body: {
      name: 'Big',
      mode: 'sequential',
      itemSeconds: 60,
      items: Array.from({ length: 500 }, (_, i) => ({ kind: 'upload', key: keys[i % 2] })),
    },
  })
  t.equal(big.status, 201)
  t.equal(big.body.items.length, 500)
  const over = await call(`/api/playlists/${big.body.id}/items`, { body: { item: { kind: 'upload', key: keys[0] } } })
  t.equal(over.status, 409)
  t.equal(over.body.code, 'PLAYLIST_FULL')
  t.equal(
    (
      await call('/api/playlists', {
        body: {
          name: 'Huge',
          mode: 'sequential',
          itemSeconds: 60,
          items: Array.from({ length: 501 }, () => ({ kind: 'upload', key: keys[0] })),
        },
      })
    ).status,
    400,
  )
})

t.test('a plan saved while a batch holds its device is not recorded over', async (t) => {
  const svc = await startApp(t, { clock, env: { DEVICE_POLL_INTERVAL: '0' } })
  // This test plays the batch itself.
  await svc.app.scheduler!.close()
  const { token } = await signUp(makeClient(svc.url).client, uniqueEmail('sched-race'))
  const dev = await pairDevice(svc, token)
  const key = await uploadPng(svc.url, token, { r: 5, g: 5, b: 5 })
  const list = (
    await jsonCall(svc.url, '/api/playlists', {
      token,
      body: { name: 'R', mode: 'sequential', itemSeconds: 600, items: [{ kind: 'upload', key }] },
    })
  ).body
  const plan = (from: string) => ({ timeZone: 'UTC', rules: [{ playlistId: list.id, days: ['mon'], from, to: '23:00' }], sleep: [] })
  t.equal((await jsonCall(svc.url, `/api/device/${dev.deviceId}/schedule`, { token, method: 'PUT', body: plan('08:00') })).status, 200)
  const db = svc.app.database.db
  const claimed = await claimDueSchedules(db, clock(), 10, 60_000, 'test-owner')
  t.equal(claimed.length, 1, 'claimed, as a batch would')
  // Saved again meanwhile (through the API): a new version, due now.
  t.equal((await jsonCall(svc.url, `/api/device/${dev.deviceId}/schedule`, { token, method: 'PUT', body: plan('09:00') })).status, 200)
  const recorded = await finishTurns(db, 'test-owner', [
    { deviceId: dev.deviceId, version: claimed[0]!.version, nextAt: new Date(clock().getTime() + 3_600_000), current: null },
  ])
  t.equal(recorded.size, 1, 'the lease is let go')
  const row = await findSchedule(db, dev.deviceId)
  t.equal(row!.version, claimed[0]!.version + 1)
  t.ok(row!.nextAt!.getTime() <= clock().getTime(), 'the new plan stays due now, not when the old batch said')
  t.equal(row!.leaseOwner, null)
})
