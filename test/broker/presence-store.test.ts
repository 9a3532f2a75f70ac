// Batched presence writes against the real database: one batch stores each device's event and
// row, a write the database refuses fails alone (the batch falls back to one write each), and
// last_seen_at never moves backwards.
import t from 'tap'
import { createPresenceStore } from '../../src/devices/presence-store.js'
import { and, eq } from 'drizzle-orm'
import { findDevice } from '../../src/devices/repository.js'
import { event } from '../../src/events/tables.js'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { pairDevice } from '../helpers/devices.js'

// One app for the file: each test pairs devices of its own and reads only their rows and events
// (an app start is about 1.2 s of CPU).
let svc: TestApp
t.before(async () => {
  svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
})

t.test('a batch with one refused write stores the others', async (t) => {
  const { token, userId } = await signUp(makeClient(svc.url).client, uniqueEmail('presence-store'))
  const devices = await Promise.all([0, 1, 2].map(() => pairDevice(svc, token)))
  const db = svc.app.database.db
  const store = createPresenceStore(db)
  const at = new Date()
  const owner = { userId, organizationId: null, name: 'x' }
  const results = await Promise.allSettled(
    devices.map((d, i) =>
      store.write({
        type: 'device.connected',
        deviceId: d.deviceId,
        owner,
        // PostgreSQL's jsonb refuses \u0000, so this one write fails inside the batch.
        data: { clientId: i === 1 ? 'bad\u0000id' : d.deviceId },
        at,
        connectionId: `node/c-${i}`,
        setActive: true,
      }),
    ),
  )
  t.equal(results[0]!.status, 'fulfilled', 'the first device is stored')
  t.equal(results[1]!.status, 'rejected', 'the refused write fails')
  t.equal(results[2]!.status, 'fulfilled', 'and the third is stored too')
  const stored = results[0]!.status === 'fulfilled' ? results[0]!.value : undefined
  t.equal(stored?.event?.userId, userId, 'attributed to the owner')
  t.equal(stored?.device?.wasActive, false, 'the row says it was inactive before')
  t.equal((await findDevice(db, devices[0]!.deviceId))?.isActive, true)
  t.equal((await findDevice(db, devices[1]!.deviceId))?.isActive, false, 'the failed write changed nothing (one transaction)')

  const earlier = new Date(at.getTime() - 60_000)
  const late = await store.write({
    type: 'device.disconnected',
    deviceId: devices[0]!.deviceId,
    owner,
    data: {},
    at: earlier,
    connectionId: 'node/c-0',
    setActive: false,
  })
  t.equal(late.device?.wasActive, true)
  t.equal((await findDevice(db, devices[0]!.deviceId))?.lastSeenAt?.getTime(), at.getTime(), 'last_seen_at keeps the newer time')
})

t.test('a disconnect that lost a race with a newer connection leaves the device online, as a takeover', async (t) => {
  const { token, userId } = await signUp(makeClient(svc.url).client, uniqueEmail('presence-race'))
  const d = await pairDevice(svc, token)
  const db = svc.app.database.db
  const store = createPresenceStore(db)
  const owner = { userId, organizationId: null, name: 'x' }
  const at = new Date()
  // The device connected to node A, then to node B; B's connect is stored before A's disconnect.
  await store.write({
    type: 'device.connected',
    deviceId: d.deviceId,
    owner,
    data: { connectionId: 'node-a/1' },
    at,
    connectionId: 'node-a/1',
    setActive: true,
  })
  await store.write({
    type: 'device.connected',
    deviceId: d.deviceId,
    owner,
    data: { connectionId: 'node-b/2' },
    at,
    connectionId: 'node-b/2',
    setActive: true,
  })
  t.equal((await findDevice(db, d.deviceId))?.connectionId, 'node-b/2')
  const ends = async (connectionId: string) =>
    (
      await db
        .select()
        .from(event)
        .where(and(eq(event.deviceId, d.deviceId), eq(event.type, 'device.disconnected')))
    ).filter((e) => e.data.connectionId === connectionId)
  const recorded = await ends('node-a/1')
  t.equal(recorded.length, 1, "B's connect recorded the end of A's connection (A may have died without doing it)")
  t.same([recorded[0]!.data.reason, recorded[0]!.data.replacedBy], ['takeover', 'node-b/2'])
  const late = await store.write({
    type: 'device.disconnected',
    deviceId: d.deviceId,
    owner,
    data: { reason: 'socket_error', connectionId: 'node-a/1' },
    at,
    connectionId: 'node-a/1',
    setActive: false,
  })
  t.equal(late.superseded, true, 'the write knows it was superseded')
  t.equal(late.device, undefined, 'the device row was not changed')
  t.equal(late.event, undefined, "A's own late disconnect adds nothing: one disconnect per connection")
  t.equal((await ends('node-a/1')).length, 1)
  const row = await findDevice(db, d.deviceId)
  t.equal(row?.isActive, true, 'still online through node B')
  t.equal(row?.connectionId, 'node-b/2')
  // B's own disconnect does apply.
  const gone = await store.write({
    type: 'device.disconnected',
    deviceId: d.deviceId,
    owner,
    data: { reason: 'client_disconnect', connectionId: 'node-b/2' },
    at,
    connectionId: 'node-b/2',
    setActive: false,
  })
  t.equal(gone.superseded, false)
  t.equal(gone.event?.data.reason, 'client_disconnect')
  t.equal((await findDevice(db, d.deviceId))?.isActive, false)
  t.equal((await findDevice(db, d.deviceId))?.connectionId, null)
})
