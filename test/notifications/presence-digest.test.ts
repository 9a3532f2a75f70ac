// Presence notifications per owner: the first change at once, later ones within the window as
// one message with the latest state of each device; nothing gathered is lost at close.
import t from 'tap'
import { createPresenceDigest, digestMessage, type PresenceNotice } from '../../src/notifications/presence-digest.js'
import type { PresenceChange } from '../../src/mqtt/contract.js'

const at = new Date('2026-11-22T10:00:00Z')
const change = (deviceId: string, online: boolean, userId = 'u1'): PresenceChange => ({
  deviceId,
  deviceName: `Frame ${deviceId}`,
  userId,
  online,
  at,
  reason: online ? undefined : 'keepalive_timeout',
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('first change at once, the rest gathered into one message per owner', async (t) => {
  const sent: PresenceNotice[] = []
  const digest = createPresenceDigest({ windowMs: 100, send: (n) => sent.push(n) })
  digest.add(change('a', true))
  t.equal(sent.length, 1, 'the first change is not delayed')
  t.same(sent[0]!.message, { title: 'Frame a is online', body: `Frame a is online at ${at.toISOString()}.`, url: '/devices/a' })
  t.equal(sent[0]!.topicScope, 'presence:a')

  for (const id of ['b', 'c', 'd']) digest.add(change(id, true))
  digest.add(change('e', true, 'u2'))
  t.equal(sent.length, 2, "another owner's first change is not held back by u1's window")
  t.equal(sent[1]!.userId, 'u2')
  digest.add(change('c', false))
  await sleep(150)
  t.equal(sent.length, 3, 'one message for what changed within the window')
  t.same(sent[2]!.message, {
    title: '2 devices online, 1 device offline',
    body: 'Online: Frame b, Frame d. Offline: Frame c.',
    url: '/devices',
  })
  t.equal(sent[2]!.topicScope, undefined, 'no topic: a later digest must not replace this one')

  await sleep(150)
  t.equal(sent.length, 3, 'a quiet window sends nothing')
  digest.add(change('b', false))
  t.equal(sent.length, 4, 'after a quiet window the next change goes out at once again')
  t.match(sent[3]!.message, { title: 'Frame b is offline', body: /went offline \(keepalive timeout\)/ })
  digest.close()
})

t.test('one device changing back and forth: only its latest state, in its own words', async (t) => {
  const sent: PresenceNotice[] = []
  const digest = createPresenceDigest({ windowMs: 50, send: (n) => sent.push(n) })
  digest.add(change('x', true))
  digest.add(change('y', false))
  digest.add(change('y', true))
  await sleep(100)
  t.equal(sent.length, 2)
  t.same(sent[1]!.message.title, 'Frame y is online', 'a single device in the window reads like a single change')
  t.equal(sent[1]!.topicScope, 'presence:y')
  digest.close()
})

t.test('window 0 sends every change; close() sends what is gathered', async (t) => {
  const each: PresenceNotice[] = []
  const none = createPresenceDigest({ windowMs: 0, send: (n) => each.push(n) })
  for (const id of ['a', 'b', 'c']) none.add(change(id, true))
  t.equal(each.length, 3)

  const sent: PresenceNotice[] = []
  const digest = createPresenceDigest({ windowMs: 60_000, send: (n) => sent.push(n) })
  digest.add(change('a', true))
  digest.add(change('b', true))
  digest.add(change('c', true))
  digest.close()
  t.equal(sent.length, 2, 'gathered changes go out at close instead of being dropped')
  t.equal(sent[1]!.message.title, '2 devices are online')
})

t.test('many devices: five names and a count', async (t) => {
  const many = Array.from({ length: 12 }, (_, i) => change(String(i), false))
  t.same(digestMessage(many), {
    title: '12 devices are offline',
    body: 'Offline: Frame 0, Frame 1, Frame 2, Frame 3, Frame 4 and 7 more.',
    url: '/devices',
  })
})
