// `npm run broker`: the same broker without the service, for protocol work. Any MQTT 3.1.1 client
// can use it: publish, subscribe, retained messages; --user lists are checked, --allow-anonymous
// alone lets everyone in.
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { close, connect, nextMessage, subackCodes, subscribe } from '../helpers/mqtt.js'

const root = new URL('../..', import.meta.url).pathname

function startBroker(args: string[]) {
  const child = spawn(`${root}node_modules/.bin/tsx`, ['broker/standalone.ts', '--port', '0', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const listening = new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8')
      const m = /listening on mqtt:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (m) resolve(Number(m[1]))
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('exit', (code) => reject(new Error(`broker exited (${code}) before listening:\n${output}`)))
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  return { child, listening, exited, output: () => output }
}

t.test('--allow-anonymous: any client, with or without credentials, publishes and subscribes', async (t) => {
  const broker = startBroker(['--allow-anonymous'])
  const port = await broker.listening
  const url = `mqtt://127.0.0.1:${port}`
  const sub = await connect(url, { clientId: 'suite-sub' })
  const pub = await connect(url, { clientId: 'suite-pub', username: 'anything', password: 'at-all' })
  t.equal(await subscribe(sub, 'suite/+/x', 1), 1, 'granted QoS 1 on a wildcard filter')
  const got = nextMessage<{ hello: string }>(sub, 'suite/a/x')
  await pub.publishAsync('suite/a/x', JSON.stringify({ hello: 'world' }), { qos: 1 })
  t.same((await got).payload, { hello: 'world' })
  await pub.publishAsync('suite/retained', JSON.stringify({ kept: true }), { qos: 1, retain: true })
  const late = await connect(url, { clientId: 'suite-late' })
  const retained = nextMessage<{ kept: boolean }>(late, 'suite/retained')
  await subscribe(late, 'suite/retained')
  const r = await retained
  t.equal(r.retain, true, 'a late subscriber gets the retained message')
  await Promise.all([close(sub), close(pub), close(late)])
  broker.child.kill('SIGTERM')
  t.equal(await broker.exited, 0, 'stops with exit code 0 on SIGTERM')
})

t.test('--user: named clients must match; anonymous ones only with --allow-anonymous', async (t) => {
  const broker = startBroker(['--user', 'alice:secret'])
  const port = await broker.listening
  const url = `mqtt://127.0.0.1:${port}`
  const ok = await connect(url, { clientId: 'alice-1', username: 'alice', password: 'secret' })
  t.equal(ok.connected, true)
  await close(ok)
  const wrong = await connect(url, { clientId: 'alice-2', username: 'alice', password: 'nope' }).catch((err: { code?: number }) => err)
  t.equal((wrong as { code?: number }).code, 4, 'a wrong password: return code 4')
  const anon = await connect(url, { clientId: 'anon' }).catch((err: { code?: number }) => err)
  t.equal((anon as { code?: number }).code, 4, 'no credentials without --allow-anonymous: return code 4')
  broker.child.kill('SIGTERM')
  await broker.exited
})

t.test('--acl-file: the Paho suite rules refuse test/nosubscribe (0x80); a user section and a pattern decide the rest', async (t) => {
  const paho = startBroker(['--allow-anonymous', '--acl-file', 'broker/paho.acl'])
  const pahoUrl = `mqtt://127.0.0.1:${await paho.listening}`
  t.match(paho.output(), /with 2 ACL rules/)
  // What client_test.py's test_subscribe_failure sends: QoS 2 on test/nosubscribe, next to an allowed filter.
  const c = await connect(pahoUrl, { clientId: 'myclientid', username: 'myusername', password: 'mypassword' })
  t.same(await subackCodes(c, ['test/nosubscribe', 'TopicA/#'], 2), [0x80, 2], 'refused with 0x80, the other granted')
  await close(c)
  paho.child.kill('SIGTERM')
  await paho.exited

  const dir = await mkdtemp(join(tmpdir(), 'acl-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'acl')
  await writeFile(file, 'topic read news/#\nuser alice\ntopic readwrite alice/#\npattern write clients/%c/up\n')
  const broker = startBroker(['--allow-anonymous', '--user', 'alice:secret', '--acl-file', file])
  const url = `mqtt://127.0.0.1:${await broker.listening}`
  const alice = await connect(url, { clientId: 'alice-phone', username: 'alice', password: 'secret' })
  const anon = await connect(url, { clientId: 'anon-1' })
  t.same(await subackCodes(alice, ['alice/#', 'news/#']), [1, 0x80], 'alice reads her own topics; anonymous rules are not hers')
  t.same(
    await subackCodes(anon, ['news/#', 'alice/#', 'clients/anon-1/up']),
    [1, 0x80, 0x80],
    'anonymous clients read news, not alice’s topics; a write-only pattern grants no subscription',
  )

  // A refused publish is acknowledged (MQTT 3.1.1 has no negative PUBACK) and reaches nobody.
  const seen: string[] = []
  alice.on('message', (topic) => seen.push(topic))
  await anon.publishAsync('alice/inbox', 'refused', { qos: 1 })
  await alice.publishAsync('alice/inbox', 'allowed', { qos: 1 })
  await new Promise((r) => setTimeout(r, 200))
  t.same(seen, ['alice/inbox'], 'only alice’s own publish arrived')
  t.equal(anon.connected, true, 'the refused publisher stays connected')
  await Promise.all([close(alice), close(anon)])
  broker.child.kill('SIGTERM')
  await broker.exited

  const bad = startBroker(['--allow-anonymous', '--acl-file', join(dir, 'missing')])
  t.equal(await bad.exited, 1, 'a missing ACL file: exit code 1')
  t.match(bad.output(), /cannot read the ACL file .*missing: ENOENT/)
  bad.listening.catch(() => {})
})
