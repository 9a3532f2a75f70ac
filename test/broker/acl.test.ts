// The standalone broker's ACL in Mosquitto's acl_file format: parsing, and which topics and
// filters each rule grants.
import t from 'tap'
import { AclError, covers, parseAcl } from '../../broker/acl.js'

t.test('covers: a rule grants a topic it matches, a filter only when it matches all the filter can', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['a/b', 'a/b', true],
    ['a/b', 'a/c', false],
    ['a/+', 'a/b', true],
    ['a/+', 'a/+', true],
    ['a/+', 'a/#', false],
    ['a/+', 'a/b/c', false],
    ['a/#', 'a', true],
    ['a/#', 'a/b/c', true],
    ['a/#', 'a/+/c', true],
    ['a/#', 'b/c', false],
    ['#', 'anything/at/all', true],
    ['#', '$SYS/broker', false],
    ['+/x', '$SYS/x', false],
    ['$SYS/#', '$SYS/broker/uptime', true],
    ['a/b', 'a/+', false],
    ['a/b', 'a/#', false],
  ]
  for (const [acl, filter, expected] of cases) t.equal(covers(acl, filter), expected, `${acl} covers ${filter}: ${expected}`)
})

t.test('parseAcl: anonymous, user and pattern rules; deny wins; nothing without a rule', async (t) => {
  const acl = parseAcl(`
# anonymous clients
topic read public/#
topic deny public/secret

user alice
topic readwrite alice/#
topic write inbox/all
topic rooms/with space

pattern read devices/%c/cmd
pattern write devices/%u/state
`)
  t.equal(acl.rules, 7)
  const anon = { clientId: 'c1' }
  const alice = { clientId: 'phone', username: 'alice' }
  t.ok(acl.allows(anon, 'read', 'public/news'))
  t.ok(acl.allows(anon, 'read', 'public/news/+'), 'a filter inside the grant')
  t.ok(
    acl.allows(anon, 'read', 'public/+'),
    'a filter that can also match the denied topic is granted (each message is checked on delivery)',
  )
  t.ok(acl.allows(anon, 'read', 'public/#'), 'so is one that reaches it')
  t.notOk(acl.allows(anon, 'read', 'public/secret'), 'deny wins over a grant: the denied topic itself, as a filter or on delivery')
  t.notOk(
    parseAcl('topic read public/#\ntopic deny public/+').allows(anon, 'read', 'public/+'),
    'a filter all of whose topics are denied is refused',
  )
  t.notOk(acl.allows(anon, 'write', 'public/news'), 'read does not grant write')
  t.notOk(acl.allows(anon, 'read', 'alice/x'), 'user rules are not for anonymous clients')
  t.ok(acl.allows(alice, 'write', 'alice/x'))
  t.ok(acl.allows(alice, 'write', 'inbox/all'))
  t.notOk(acl.allows(alice, 'read', 'inbox/all'), 'write only')
  t.ok(acl.allows(alice, 'read', 'rooms/with space'), 'a topic with a space, readwrite by default')
  t.notOk(acl.allows(alice, 'read', 'public/news'), 'anonymous rules are not for named users')
  t.ok(acl.allows(alice, 'read', 'devices/phone/cmd'), '%c is the client id')
  t.notOk(acl.allows(alice, 'read', 'devices/other/cmd'))
  t.ok(acl.allows(alice, 'write', 'devices/alice/state'), '%u is the user name')
  t.notOk(acl.allows(anon, 'write', 'devices/c1/state'), 'a %u pattern grants nothing to anonymous clients')
  t.notOk(acl.allows({ clientId: '+', username: 'alice' }, 'read', 'devices/x/cmd'), 'a client id with a wildcard cannot widen a pattern')
  t.notOk(parseAcl('').allows(anon, 'read', 'x'), 'an empty file allows nothing')
})

t.test('parseAcl: mistakes name their line', async (t) => {
  t.throws(() => parseAcl('topic read a\nfrobnicate b'), new AclError('line 2: unknown keyword frobnicate (topic, pattern or user)'))
  t.throws(() => parseAcl('user'), /line 1: user needs a name/)
  t.throws(() => parseAcl('topic'), /line 1: topic needs a topic/)
})
