// The changes carried in patches/ (applied by patch-package on npm install): if a patch stops
// applying, npm ci fails; if an upgrade makes one moot or undoes it, this file says which.
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import t from 'tap'

const require = createRequire(import.meta.url)

t.test('every patch is for the installed version of its package', async (t) => {
  const patches = readdirSync(new URL('../../patches/', import.meta.url)).filter((f) => f.endsWith('.patch'))
  t.ok(patches.length > 0)
  for (const file of patches) {
    const [, name, version] = /^(.+)\+(\d+\.\d+\.\d+)\.patch$/.exec(file.replace(/^(@[^+]+)\+/, '$1/')) ?? []
    // Read from the folder: not every package exports its package.json.
    const installed = JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as {
      version: string
    }
    t.equal(installed.version, version, `${file}: ${name} is still ${version}`)
  }
})

t.test('mqtt-packet: the parser holds a plain BufferList and, after CONNECT, only what it reads again', async (t) => {
  const mqttPacket = require('mqtt-packet') as typeof import('mqtt-packet')
  const parser = mqttPacket.parser({ protocolVersion: 4 }) as unknown as { _list: { pipe?: unknown }; settings: Record<string, unknown> }
  t.equal(parser._list.constructor.name, 'BufferList', "bl's BufferList")
  t.equal(typeof parser._list.pipe, 'undefined', 'not the stream (a Duplex, about 1 KiB more per connection)')
  const connect = mqttPacket.generate({
    cmd: 'connect',
    protocolId: 'MQTT',
    protocolVersion: 4,
    clean: true,
    clientId: 'device-1',
    keepalive: 30,
    username: 'device-1',
    password: Buffer.from('the secret'),
  })
  const seen: Array<{ cmd: string; password?: Buffer }> = []
  ;(parser as unknown as NodeJS.EventEmitter).on('packet', (p) => seen.push(p))
  ;(parser as unknown as { parse(b: Buffer): void }).parse(connect)
  t.equal(seen[0]?.cmd, 'connect')
  t.equal(seen[0]?.password?.toString(), 'the secret', 'the packet itself is whole')
  t.same(Object.keys(parser.settings).sort(), ['bridgeMode', 'protocolVersion'], 'the parser no longer keeps the password')
})

t.test('aedes: queued and retained messages are read one at a time, without a stream pipeline per connect', async (t) => {
  const utils = (await import(new URL('../../node_modules/aedes/lib/utils.js', import.meta.url).href)) as {
    drainStream?: (s: NodeJS.ReadableStream, fn: (item: unknown, next: () => void) => void, done: (err?: Error) => void) => void
  }
  t.type(utils.drainStream, 'function', 'the patched helper is there')
  const { Readable } = await import('node:stream')
  const seen: unknown[] = []
  await new Promise<void>((resolve, reject) =>
    utils.drainStream!(
      Readable.from([1, 2, 3]),
      (item, next) => {
        seen.push(item)
        setImmediate(next)
      },
      (err) => (err ? reject(err) : resolve()),
    ),
  )
  t.same(seen, [1, 2, 3], 'in order, each after the previous one is handled')
  const failing = new Readable({
    read() {
      this.destroy(new Error('broken store'))
    },
  })
  const err = await new Promise<Error | undefined>((resolve) => utils.drainStream!(failing, (_i, next) => next(), resolve))
  t.match(err?.message, /broken store/, 'a stream error reaches the callback instead of going unhandled')
})

/** A connection to `server` that records each write the broker makes to it: one entry per write, its chunks. */
async function recordingClient(server: import('../../broker/server.js').MqttServer, clientId: string, topic: string) {
  const { Duplex } = await import('node:stream')
  const mqttPacket = require('mqtt-packet') as typeof import('mqtt-packet')
  const writes: Buffer[][] = []
  const parser = mqttPacket.parser({ protocolVersion: 4 })
  const seen: string[] = []
  ;(parser as unknown as NodeJS.EventEmitter).on('packet', (p: { cmd: string }) => seen.push(p.cmd))
  const record = (chunks: Buffer[]) => {
    writes.push(chunks)
    for (const c of chunks) parser.parse(c)
  }
  const conn = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, done) {
      record([chunk])
      done()
    },
    writev(chunks, done) {
      record(chunks.map((c) => c.chunk as Buffer))
      done()
    },
  })
  server.handleStream(conn)
  const until = async (cmd: string, n = 1) => {
    for (let i = 0; i < 200 && seen.filter((c) => c === cmd).length < n; i++) await new Promise((r) => setTimeout(r, 10))
  }
  conn.push(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId, keepalive: 30 }))
  await until('connack')
  conn.push(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic, qos: 0 }] }))
  await until('suback')
  writes.length = 0
  return { writes, until }
}

t.test('aedes: the packets a client is sent in one turn of the event loop go out in one write', async (t) => {
  const { bareBroker } = await import('../helpers/memory-mqtt.js')
  const { server } = await bareBroker(t)
  const c = await recordingClient(server, 'corked', 'fleet/cmd')
  for (let i = 0; i < 3; i++)
    server.aedes.publish({ cmd: 'publish', topic: 'fleet/cmd', payload: Buffer.from(`m${i}`), qos: 0, retain: false, dup: false }, () => {})
  await c.until('publish', 3)
  t.equal(c.writes.length, 1, 'one write (a writev on a socket), not one per message')
  const mqttPacket = require('mqtt-packet') as typeof import('mqtt-packet')
  const parser = mqttPacket.parser({ protocolVersion: 4 })
  let inIt = 0
  ;(parser as unknown as NodeJS.EventEmitter).on('packet', () => inIt++)
  ;(parser as unknown as { parse(b: Buffer): void }).parse(Buffer.concat(c.writes[0] ?? []))
  t.equal(inIt, 3, 'all three messages in it')
})

t.test('aedes: a QoS 0 message is encoded once and the same bytes go to every subscriber', async (t) => {
  const { bareBroker } = await import('../helpers/memory-mqtt.js')
  const { server } = await bareBroker(t)
  const a = await recordingClient(server, 'a', 'fleet/cmd')
  const b = await recordingClient(server, 'b', 'fleet/cmd')
  server.aedes.publish({ cmd: 'publish', topic: 'fleet/cmd', payload: Buffer.from('to all'), qos: 0, retain: false, dup: false }, () => {})
  await a.until('publish')
  await b.until('publish')
  t.equal(a.writes.flat().length, 1, 'the whole packet in one chunk (mqtt-packet writes five)')
  t.equal(a.writes[0]?.[0], b.writes[0]?.[0], 'the very same buffer for both')
})

t.test('mqtt-packet: its debug() calls are skipped while debugging is off, arguments and all', async (t) => {
  for (const file of ['parser.js', 'writeToStream.js']) {
    const source = readFileSync(new URL(`../../node_modules/mqtt-packet/${file}`, import.meta.url), 'utf8')
    const calls = source
      .split('\n')
      .filter((line) => /\bdebug\(/.test(line) && !/^\s*\/\//.test(line) && !line.includes("require('debug')"))
    t.ok(calls.length > 10, `${file}: its debug calls found (${calls.length})`)
    t.same(
      calls.filter((line) => !/^\s*if \(debug\.enabled\) debug\(/.test(line)),
      [],
      `${file}: every one behind debug.enabled`,
    )
  }
  // still there for whoever turns it on at run time
  // the debug module mqtt-packet itself loads (not a dependency of ours)
  const fromMqttPacket = createRequire(require.resolve('mqtt-packet'))
  const debug = fromMqttPacket('debug') as { enable(ns: string): void; disable(): string; log: (...a: unknown[]) => void }
  const mqttPacket = require('mqtt-packet') as typeof import('mqtt-packet')
  const lines: string[] = []
  const previous = debug.disable()
  const log = debug.log
  debug.log = (...a: unknown[]) => lines.push(String(a[0]))
  debug.enable('mqtt-packet:writeToStream')
  try {
    mqttPacket.generate({ cmd: 'pingreq' })
  } finally {
    debug.log = log
    debug.disable()
    if (previous) debug.enable(previous)
  }
  t.ok(
    lines.some((l) => l.includes('generate called')),
    'debug output when enabled',
  )
})
