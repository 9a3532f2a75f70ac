// Access changes reach companion apps on every node of a cluster: a member removed through
// instance A loses the connections it holds on instance B (TCP with its token, WebSocket with its
// cookie) at once, and a device deleted through A closes the apps watching it on B. Revocation
// travels the same way (the session cache's clear, through Redis); deletions through the brokers'
// shared emitter.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import type { MqttClient } from 'mqtt'
import { topicFor } from '../../src/mqtt/contract.js'
import type { TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { clusterSkip, startCluster } from '../helpers/cluster.js'
import { pairDevice } from '../helpers/devices.js'
import { connect, mqttUrl, subackCodes, subscribe } from '../helpers/mqtt.js'
import { createOrganization, joinOrganization } from '../helpers/organizations.js'
import { appFetch } from '../helpers/app-fetch.js'

const skip = await clusterSkip()
/** How long a connection may stay open after the change that ends its access: a bound for a hang. */
const CLOSE_WITHIN_MS = 10_000

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

const clientId = () => `app-${randomBytes(6).toString('hex')}`

t.test('remove-member on one node closes the member’s apps on the other', { skip }, async (t) => {
  const [a, b] = await startCluster(t)
  const owner = makeClient(a.url)
  const ownerToken = (await signUp(owner.client, uniqueEmail('cl-owner'))).token
  const memberEmail = uniqueEmail('cl-member')
  // The member signs in through B, as their app talks to B.
  const member = makeClient(b.url)
  const memberToken = (await signUp(member.client, memberEmail)).token
  const orgId = await createOrganization(owner.client, 'Cluster Org')
  const memberId = await joinOrganization(a, owner.client, orgId, { client: member.client, email: memberEmail })
  const dev = await pairDevice(a, ownerToken, { organizationId: orgId })

  const onB = async (app: Promise<MqttClient>) => {
    const c = await app
    t.teardown(() => c.end(true))
    await subscribe(c, topicFor(dev.deviceId, 'state'))
    await subscribe(c, topicFor(dev.deviceId, 'events'))
    return c
  }
  const tcp = await onB(connect(mqttUrl(b), { clientId: clientId(), username: 'user', password: memberToken, clean: true }))
  const ws = await onB(
    connect(`${b.url.replace(/^http/, 'ws')}/mqtt`, {
      clientId: clientId(),
      username: 'user',
      clean: true,
      wsOptions: { headers: { cookie: member.jar.header(), origin: b.url } },
    }),
  )
  const ownerOnB = await onB(connect(mqttUrl(b), { clientId: clientId(), username: 'user', password: ownerToken, clean: true }))

  const tcpClosed = closedWithin(tcp)
  const wsClosed = closedWithin(ws)
  const removed = await owner.client.organization.removeMember({ memberIdOrEmail: memberId, organizationId: orgId })
  t.notOk(removed.error, 'removed through A')
  t.ok(await tcpClosed, 'the member’s TCP connection on B is closed')
  t.ok(await wsClosed, 'the member’s WebSocket connection on B is closed')
  t.equal(ownerOnB.connected, true, 'the owner’s app on B is untouched')

  const again = await connect(mqttUrl(b), { clientId: clientId(), username: 'user', password: memberToken, clean: true })
  t.teardown(() => again.end(true))
  t.same(await subackCodes(again, [topicFor(dev.deviceId, 'state')]), [128], 'on B a new SUBSCRIBE is refused')

  // A device deleted through A: the apps watching it on B are closed too.
  const ownerClosed = closedWithin(ownerOnB)
  const deleted = await deleteDevice(a, ownerToken, dev.deviceId)
  t.equal(deleted, 200, 'deleted through A')
  t.ok(await ownerClosed, 'the owner’s app watching it on B is closed')
})

async function deleteDevice(node: TestApp, token: string, deviceId: string): Promise<number> {
  const res = await appFetch(`${node.url}/api/device/delete`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ deviceId }),
  })
  await res.arrayBuffer()
  return res.status
}
