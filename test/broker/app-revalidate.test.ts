// A companion app's live MQTT connection follows what its user may see: when a member is removed
// from an organization, leaves it, or the organization or the device is deleted, the member's open
// connections watching its devices (TCP with a session token, WebSocket with the session cookie)
// are closed at once, not at their next reconnect; reconnected, their SUBSCRIBE is refused. A
// change that keeps the access (a role change) and apps watching other devices are left alone.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import type { MqttClient } from 'mqtt'
import { topicFor } from '../../src/mqtt/contract.js'
import { startApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail, type CookieJar, type Client } from '../helpers/client.js'
import { pairDevice, type PairedDevice } from '../helpers/devices.js'
import { connect, mqttUrl, subackCodes, subscribe } from '../helpers/mqtt.js'
import { createOrganization, joinOrganization } from '../helpers/organizations.js'
import { appFetch } from '../helpers/app-fetch.js'

const svc = await startApp(t, { env: { DEVICE_POLL_INTERVAL: '0' } })
const wsUrl = `${svc.url.replace(/^http/, 'ws')}/mqtt`
/** How long a connection may stay open after the change that ends its access: a bound for a hang. */
const CLOSE_WITHIN_MS = 10_000

type Person = { client: Client; jar: CookieJar; token: string; userId: string; email: string }
async function person(prefix: string): Promise<Person> {
  const email = uniqueEmail(prefix)
  const { client, jar } = makeClient(svc.url)
  const { token, userId } = await signUp(client, email)
  return { client, jar, token, userId, email }
}

const clientId = () => `app-${randomBytes(6).toString('hex')}`
/** A companion app over TCP with its session token. */
const overTcp = (p: Person) => connect(mqttUrl(svc), { clientId: clientId(), username: 'user', password: p.token, clean: true })
/** The console over WebSocket with the session cookie, from a page of the service. */
const overWebSocket = (p: Person) =>
  connect(wsUrl, {
    clientId: clientId(),
    username: 'user',
    clean: true,
    wsOptions: { headers: { cookie: p.jar.header(), origin: svc.url } },
  })

/** Subscribes to a device's state and events, as an app watching it does. */
async function watch(app: MqttClient, dev: PairedDevice) {
  await subscribe(app, topicFor(dev.deviceId, 'state'))
  await subscribe(app, topicFor(dev.deviceId, 'events'))
}

/** Resolves true once the connection is closed, false if it is still open after `ms`. */
function closedWithin(app: MqttClient, ms = CLOSE_WITHIN_MS): Promise<boolean> {
  if (!app.connected) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    app.once('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}

/** Brings the device online, so its state and events topics carry something. */
async function deviceOnline(dev: PairedDevice) {
  return connect(mqttUrl(svc), { clientId: dev.deviceId, username: dev.deviceId, password: dev.password, clean: false })
}

/** A world: an owner, an organization device, a member watching it over TCP and WebSocket, the owner watching too. */
async function world(t: Tap, label: string) {
  const owner = await person(`${label}-owner`)
  const member = await person(`${label}-member`)
  const orgId = await createOrganization(owner.client, `Org ${label}`)
  const memberId = await joinOrganization(svc, owner.client, orgId, member)
  const dev = await pairDevice(svc, owner.token, { organizationId: orgId })
  const own = await pairDevice(svc, member.token)
  const tcp = await overTcp(member)
  const ws = await overWebSocket(member)
  const ownerApp = await overTcp(owner)
  // The member's app watching only their own device: never affected by the organization.
  const memberOwn = await overTcp(member)
  t.teardown(() => {
    for (const c of [tcp, ws, ownerApp, memberOwn]) c.end(true)
  })
  await watch(tcp, dev)
  await watch(ws, dev)
  await watch(ownerApp, dev)
  await watch(memberOwn, own)
  return { owner, member, orgId, memberId, dev, tcp, ws, ownerApp, memberOwn }
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0]

t.test('remove-member closes the member’s TCP and WebSocket connections watching the organization’s devices', async (t) => {
  const w = await world(t, 'removed')
  const device = await deviceOnline(w.dev)
  t.teardown(() => device.end(true))
  const seen: string[] = []
  w.tcp.on('message', (topic) => seen.push(topic))

  const tcpClosed = closedWithin(w.tcp)
  const wsClosed = closedWithin(w.ws)
  const removed = await w.owner.client.organization.removeMember({ memberIdOrEmail: w.memberId, organizationId: w.orgId })
  t.notOk(removed.error, 'remove-member')
  t.ok(await tcpClosed, 'the TCP connection (session token) is closed')
  t.ok(await wsClosed, 'the WebSocket connection (session cookie) is closed')

  // Afterwards the device goes offline: its state and events reach the owner, never the member.
  const ownerSees = new Promise<void>((resolve) =>
    w.ownerApp.on('message', (topic) => topic === topicFor(w.dev.deviceId, 'events') && resolve()),
  )
  const before = seen.length
  device.end(true)
  await ownerSees
  t.equal(seen.length, before, 'nothing more reached the member')
  t.equal(w.ownerApp.connected, true, 'the owner’s app is untouched')
  t.equal(w.memberOwn.connected, true, 'the member’s app watching their own device is untouched')

  // Reconnected, the member may watch their own device but no longer the organization's.
  const again = await overTcp(w.member)
  t.teardown(() => again.end(true))
  t.same(
    await subackCodes(again, [topicFor(w.dev.deviceId, 'state'), topicFor(w.dev.deviceId, 'events')]),
    [128, 128],
    'a new SUBSCRIBE to the organization’s device is refused',
  )
  const http = await appFetch(`${svc.url}/api/device/${w.dev.deviceId}`, { headers: { authorization: `Bearer ${w.member.token}` } })
  t.equal(http.status, 404, 'as HTTP answers')
})

t.test('leaving the organization closes the member’s connections', async (t) => {
  const w = await world(t, 'left')
  const tcpClosed = closedWithin(w.tcp)
  const wsClosed = closedWithin(w.ws)
  const left = await w.member.client.organization.leave({ organizationId: w.orgId })
  t.notOk(left.error, 'leave')
  t.ok(await tcpClosed, 'TCP closed')
  t.ok(await wsClosed, 'WebSocket closed')
  t.equal(w.ownerApp.connected, true, 'the owner’s app is untouched')
  t.equal(w.memberOwn.connected, true, 'the member’s other app is untouched')
})

t.test('a role change that keeps the access keeps the connections', async (t) => {
  const w = await world(t, 'promoted')
  const promoted = await w.owner.client.organization.updateMemberRole({ memberId: w.memberId, role: 'admin', organizationId: w.orgId })
  t.notOk(promoted.error, 'update-member-role')
  t.notOk(await closedWithin(w.tcp, 1500), 'an admin still watches the device: TCP stays open')
  t.equal(w.ws.connected, true, 'WebSocket stays open')
  t.same(await subackCodes(w.tcp, [topicFor(w.dev.deviceId, 'state')]), [1], 'and may subscribe again')
})

t.test('deleting the organization closes its members’ connections; the owner keeps the device', async (t) => {
  const w = await world(t, 'deleted-org')
  const tcpClosed = closedWithin(w.tcp)
  const wsClosed = closedWithin(w.ws)
  const deleted = await w.owner.client.organization.delete({ organizationId: w.orgId })
  t.notOk(deleted.error, 'organization/delete')
  t.ok(await tcpClosed, 'TCP closed')
  t.ok(await wsClosed, 'WebSocket closed')
  // The device stays with the account that paired it (its organization is set null).
  t.notOk(await closedWithin(w.ownerApp, 1500), 'the owner still sees the device: their app stays')
})

t.test('deleting a device closes the connections watching it, on every path to it', async (t) => {
  const w = await world(t, 'deleted-device')
  const tcpClosed = closedWithin(w.tcp)
  const wsClosed = closedWithin(w.ws)
  const ownerClosed = closedWithin(w.ownerApp)
  const res = await appFetch(`${svc.url}/api/device/delete`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${w.owner.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ deviceId: w.dev.deviceId }),
  })
  t.equal(res.status, 200, 'deleted')
  t.ok(await tcpClosed, 'the member’s TCP connection closed')
  t.ok(await wsClosed, 'the member’s WebSocket connection closed')
  t.ok(await ownerClosed, 'the owner’s too: the device is gone')
  t.equal(w.memberOwn.connected, true, 'an app watching another device is untouched')
})

t.test('remove-member answers only once the member’s connections are closed: the next state publish does not reach them', async (t) => {
  const w = await world(t, 'next-publish')
  const broker = svc.app.broker
  const announce = broker?.announce
  if (!broker || !announce) throw new Error('the app runs its embedded broker')
  // The check as it runs on a busy database: slower than the answer's way back to the client.
  const check = broker.revalidateApps
  broker.revalidateApps = async () => {
    await new Promise((resolve) => setTimeout(resolve, 300))
    return check()
  }
  t.teardown(() => {
    broker.revalidateApps = check
  })
  const state = topicFor(w.dev.deviceId, 'state')
  /** Resolves once this app receives the state published with `reason` (not a retained one from before). */
  const stateArrives = (app: MqttClient, reason: string) =>
    new Promise<void>((resolve) => {
      const on = (topic: string, payload: Buffer) => {
        if (topic !== state || !payload.toString().includes(`"${reason}"`)) return
        app.off('message', on)
        resolve()
      }
      app.on('message', on)
    })

  const before = stateArrives(w.tcp, 'before')
  await announce(w.dev.deviceId, { online: true, since: new Date().toISOString(), reason: 'before' })
  await before
  t.pass('a member watching the device gets its state')

  const memberGot: string[] = []
  w.tcp.on('message', (topic, payload) => topic === state && memberGot.push(payload.toString()))
  const removed = await w.owner.client.organization.removeMember({ memberIdOrEmail: w.memberId, organizationId: w.orgId })
  t.notOk(removed.error, 'remove-member')
  // Published the moment the answer is in, by the service itself.
  const ownerGets = stateArrives(w.ownerApp, 'after')
  await announce(w.dev.deviceId, { online: false, since: new Date().toISOString(), reason: 'after' })
  await ownerGets
  // Whatever the member's socket carried arrived before its close.
  t.ok(await closedWithin(w.tcp), 'the member’s connection is closed')
  t.same(
    memberGot.filter((p) => p.includes('"after"')),
    [],
    'the owner got the state; the removed member did not',
  )
})
