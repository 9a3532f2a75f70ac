// `npm run broker`: the same broker without the service, for protocol work. Any MQTT 3.1.1 client
// can use it: publish, subscribe, retained messages; --user lists are checked, --allow-anonymous
// alone lets everyone in.
import t from 'tap'
import { spawn } from 'node:child_process'
import { close, connect, nextMessage, subscribe } from '../helpers/mqtt.js'

const root = new URL('../..', import.meta.url).pathname

function startBroker(args: string[]) {
  const child = spawn(`${root}node_modules/.bin/tsx`, ['broker/standalone.ts', '--port', '0', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
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
