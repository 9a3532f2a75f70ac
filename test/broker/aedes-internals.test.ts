// Pins every aedes private field and behaviour broker/aedes-internals.ts relies on, against the
// installed aedes on a bare broker (none of the service's wrappers installed): after an aedes
// upgrade this file fails first, naming what moved, instead of a broker test timing out.
import t from 'tap'
import { createServer, type Server } from 'node:net'
import { Aedes, type AedesOptions, type Client, type PublishPacket } from 'aedes'
import mqtt, { type MqttClient } from 'mqtt'
import mqemitter from 'mqemitter'
import {
  activeWill,
  connackSent,
  connectedClients,
  dropWillOnClose,
  emitterOf,
  onClientRegistered,
  parserOf,
  pendingWill,
  sentDisconnect,
  sessionStore,
  setDuplicates,
  setPendingWill,
  subscriptionsOf,
  wrapDelivery,
  type Deliver,
} from '../../broker/aedes-internals.js'

type Rig = { aedes: Aedes; port: number; server: Server }

async function start(hooks: Partial<AedesOptions> = {}, before?: (mq: ReturnType<typeof emitterOf>) => void): Promise<Rig> {
  // aedes' default emitter, created here so a listener can be added before aedes adds its own.
  const mq = before ? mqemitter() : undefined
  if (mq) before!(mq as unknown as ReturnType<typeof emitterOf>)
  const aedes = await Aedes.createBroker({ id: `internals-${Math.random().toString(16).slice(2)}`, mq, ...hooks })
  const server = createServer((socket) => aedes.handle(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { aedes, server, port: (server.address() as { port: number }).port }
}

async function stop(rig: Rig) {
  await new Promise<void>((resolve) => rig.aedes.close(() => resolve()))
  await new Promise<void>((resolve) => rig.server.close(() => resolve()))
}

function connect(rig: Rig, opts: mqtt.IClientOptions): Promise<MqttClient> {
  return mqtt.connectAsync(`mqtt://127.0.0.1:${rig.port}`, { protocolVersion: 4, reconnectPeriod: 0, ...opts })
}

const until = async (check: () => boolean, what: string, ms = 5000) => {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

t.test('broker fields: clients, persistence, mq, brokers', async (t) => {
  const rig = await start()
  t.teardown(() => stop(rig))
  const c = await connect(rig, { clientId: 'pin-broker' })
  t.teardown(() => c.endAsync())

  const clients = connectedClients(rig.aedes)
  t.type(clients, 'object', 'aedes.clients is an object')
  t.ok(clients['pin-broker'], 'holding each connected client by id')
  t.equal(clients['pin-broker']?.id, 'pin-broker')

  const store = sessionStore(rig.aedes)
  for (const fn of ['outgoingStream', 'createRetainedStreamCombi', 'streamWill', 'delWill'] as const)
    t.type(store[fn], 'function', `aedes.persistence.${fn}`)

  t.type(emitterOf(rig.aedes).on, 'function', 'aedes.mq.on')
  t.type(rig.aedes.brokers, 'object', 'aedes.brokers (heartbeats by broker id)')
})

t.test('persistence streams what the device broker reads: retained messages and a session queue', async (t) => {
  const rig = await start()
  t.teardown(() => stop(rig))
  await new Promise<void>((resolve) =>
    rig.aedes.publish(
      { cmd: 'publish', topic: 'pin/retained', payload: Buffer.from('r'), qos: 1, retain: true, dup: false } as PublishPacket,
      () => resolve(),
    ),
  )
  const retained = []
  for await (const p of sessionStore(rig.aedes).createRetainedStreamCombi(['pin/retained'])) retained.push(p)
  t.equal(retained.length, 1)
  t.equal(retained[0]?.topic, 'pin/retained')
  t.equal(Buffer.from(retained[0]!.payload!).toString(), 'r')

  const c = await connect(rig, { clientId: 'pin-queue', clean: false })
  await c.subscribeAsync('pin/queue', { qos: 1 })
  await c.endAsync()
  await new Promise<void>((resolve) =>
    rig.aedes.publish(
      { cmd: 'publish', topic: 'pin/queue', payload: Buffer.from('q'), qos: 1, retain: false, dup: false } as PublishPacket,
      () => resolve(),
    ),
  )
  const queued = []
  for await (const p of sessionStore(rig.aedes).outgoingStream({ id: 'pin-queue' })) queued.push(p)
  t.same(
    queued.map((p) => [p.topic, Buffer.from(p.payload!).toString()]),
    [['pin/queue', 'q']],
    "an offline session's queue",
  )
})

t.test('wills: read and replaced during authenticate, then held as client.will and stored', async (t) => {
  let seenAtAuth: PublishPacket | null | undefined
  const ours = { cmd: 'publish', topic: 'pin/will/ours', payload: Buffer.from('gone'), qos: 1, retain: false } as PublishPacket
  const rig = await start({
    authenticate(client, _u, _p, done) {
      seenAtAuth = pendingWill(client)
      setPendingWill(client, ours)
      done(null, true)
    },
  })
  t.teardown(() => stop(rig))
  const c = await connect(rig, {
    clientId: 'pin-will',
    will: { topic: 'pin/will/theirs', payload: Buffer.from('x'), qos: 0, retain: false },
  })
  t.equal(seenAtAuth?.topic, 'pin/will/theirs', "client._will holds the CONNECT's will during authenticate")
  const client = connectedClients(rig.aedes)['pin-will']!
  t.equal(activeWill(client), ours, 'client.will is the very packet set in authenticate')
  const stored = []
  for await (const w of sessionStore(rig.aedes).streamWill({})) stored.push(w)
  t.ok(
    stored.some((w) => w.clientId === 'pin-will' && w.brokerId === rig.aedes.id),
    'and aedes stored it (streamWill: clientId, brokerId)',
  )

  // A client lost without DISCONNECT: aedes publishes that will.
  const published: string[] = []
  rig.aedes.on('publish', (p) => void published.push(p.topic))
  t.equal(sentDisconnect(client), false, 'client._disconnected is false while connected')
  c.stream.destroy()
  await until(() => published.includes('pin/will/ours'), 'the will')
  t.pass('a lost client has its will published')
})

t.test('_disconnected: set by DISCONNECT, and setting it drops the will on close', async (t) => {
  const will = { topic: 'pin/dropped', payload: Buffer.from('x'), qos: 0 as const, retain: false }
  const rig = await start()
  t.teardown(() => stop(rig))
  const published: string[] = []
  rig.aedes.on('publish', (p) => void published.push(p.topic))
  const disconnected: Client[] = []
  rig.aedes.on('clientDisconnect', (c) => void disconnected.push(c))

  await (await connect(rig, { clientId: 'pin-clean', will })).endAsync()
  await until(() => disconnected.some((c) => c.id === 'pin-clean'), 'the disconnect')
  t.equal(sentDisconnect(disconnected.find((c) => c.id === 'pin-clean')!), true, 'a DISCONNECT sets client._disconnected')

  await connect(rig, { clientId: 'pin-kicked', will })
  const client = connectedClients(rig.aedes)['pin-kicked']!
  dropWillOnClose(client)
  await new Promise<void>((resolve) => client.close(() => resolve()))
  await until(() => disconnected.some((c) => c.id === 'pin-kicked'), 'the close')
  await new Promise((r) => setTimeout(r, 100))
  t.notOk(published.includes('pin/dropped'), 'a client closed after dropWillOnClose does not have its will published')
  const stored = []
  for await (const w of sessionStore(rig.aedes).streamWill({})) stored.push(w.clientId)
  t.notOk(stored.includes('pin-kicked'), 'and its stored will is deleted')
})

t.test('client fields: subscriptions, connackSent, _parser', async (t) => {
  const atConnect: Array<{ connackSent: boolean; parser: ReturnType<typeof parserOf> }> = []
  const rig = await start({
    preConnect(client, _packet, done) {
      atConnect.push({ connackSent: connackSent(client), parser: parserOf(client) })
      done(null, true)
    },
  })
  t.teardown(() => stop(rig))
  let sentAtEvent: unknown
  rig.aedes.on('connackSent', (_p, client) => {
    sentAtEvent = (client as unknown as Record<string, unknown>).connackSent
  })
  const c = await connect(rig, { clientId: 'pin-fields' })
  t.teardown(() => c.endAsync())
  const client = connectedClients(rig.aedes)['pin-fields']!
  t.equal(atConnect[0]?.connackSent, false, 'client.connackSent is false before the CONNACK')
  // aedes emits 'connackSent' once the CONNACK is written, which may come after the client has read it.
  await until(() => connackSent(client), 'client.connackSent')
  t.type(sentAtEvent, 'boolean', "client.connackSent is a boolean when 'connackSent' is emitted")
  t.pass('and becomes true once the CONNACK is written')

  await c.subscribeAsync('pin/a', { qos: 1 })
  await c.subscribeAsync('pin/b/#', { qos: 0 })
  const subs = subscriptionsOf(client)
  t.same(Object.keys(subs).sort(), ['pin/a', 'pin/b/#'], 'client.subscriptions is keyed by filter')
  t.match(subs['pin/a'], { qos: 1 }, 'with the granted qos')

  const parser = parserOf(client)
  t.equal(atConnect[0]?.parser, parser, 'client._parser exists from preConnect on, the same object for the connection')
  t.type(parser.emit, 'function', '_parser.emit')
  t.type(parser._parseLength, 'function', '_parser._parseLength')
  t.type(parser._emitError, 'function', '_parser._emitError')
  t.type(parser.packet, 'object', '_parser.packet')
})

t.test("_parser: its 'packet' events reach aedes, _parseLength sets packet.length, _emitError closes the client", async (t) => {
  const seen: string[] = []
  const lengths: number[] = []
  const rig = await start({
    preConnect(client, _packet, done) {
      const parser = parserOf(client)
      const emit = parser.emit
      parser.emit = function (this: unknown, event: string | symbol, ...args: unknown[]) {
        if (event === 'packet') seen.push((args[0] as { cmd: string }).cmd)
        return emit.call(this, event, ...args)
      }
      const parseLength = parser._parseLength
      parser._parseLength = function (this: typeof parser) {
        const done = parseLength.call(this)
        if (done) lengths.push(this.packet.length)
        return done
      }
      done(null, true)
    },
  })
  t.teardown(() => stop(rig))
  const c = await connect(rig, { clientId: 'pin-parser' })
  await c.publishAsync('pin/p', Buffer.alloc(300), { qos: 1 })
  t.ok(seen.includes('publish'), 'a packet passes through the wrapped emit (installed in preConnect)')
  t.ok(
    lengths.some((l) => l >= 300),
    '_parseLength has set packet.length to the remaining length',
  )

  const closed = new Promise<void>((resolve) => c.once('close', () => resolve()))
  parserOf(connectedClients(rig.aedes)['pin-parser']!)._emitError(new Error('pinned'))
  await closed
  t.pass('_emitError closes the connection')
})

t.test('delivery: functions wrapped in preConnect serve later subscriptions; duplicates read by broker id', async (t) => {
  const delivered: Array<{ brokerId?: string; brokerCounter?: number }> = []
  const asked: Array<string | symbol> = []
  let duplicatesBefore: unknown
  const rig = await start({
    preConnect(client, _packet, done) {
      duplicatesBefore = (client as unknown as Record<string, unknown>).duplicates
      setDuplicates(client, new Proxy({}, { get: (_t, key) => (asked.push(key), undefined), set: () => true }))
      wrapDelivery(client, (deliver: Deliver) => (packet, cb) => {
        delivered.push(packet)
        deliver(packet, cb)
      })
      done(null, true)
    },
  })
  t.teardown(() => stop(rig))
  const c = await connect(rig, { clientId: 'pin-deliver' })
  t.teardown(() => c.endAsync())
  t.type(duplicatesBefore, 'object', 'client.duplicates exists at preConnect')
  await c.subscribeAsync('pin/q1', { qos: 1 })
  await c.subscribeAsync('pin/q0', { qos: 0 })
  const got: string[] = []
  c.on('message', (topic) => void got.push(topic))
  await new Promise<void>((resolve) =>
    rig.aedes.publish(
      { cmd: 'publish', topic: 'pin/q1', payload: Buffer.from('1'), qos: 1, retain: false, dup: false } as PublishPacket,
      () => resolve(),
    ),
  )
  await new Promise<void>((resolve) =>
    rig.aedes.publish(
      { cmd: 'publish', topic: 'pin/q0', payload: Buffer.from('0'), qos: 0, retain: false, dup: false } as PublishPacket,
      () => resolve(),
    ),
  )
  await until(() => got.length === 2, 'both messages')
  t.equal(delivered.length, 2, 'a QoS 1 and a QoS 0 delivery both go through the wrapped functions')
  t.ok(
    delivered.every((p) => p.brokerId === rig.aedes.id && typeof p.brokerCounter === 'number'),
    'packets carry brokerId and brokerCounter',
  )
  t.ok(asked.includes(rig.aedes.id), 'aedes reads duplicates[brokerId] before delivering')
})

t.test(
  '$SYS/{broker}/new/clients: announced with the client id; a listener added first runs before aedes closes the local client',
  async (t) => {
    const seen: Array<{ brokerId: string; clientId: string; localClosed?: boolean }> = []
    let aedes: Aedes | undefined
    const rig = await start({}, (mq) =>
      onClientRegistered(mq, (brokerId, clientId) => {
        const local = aedes && connectedClients(aedes)[clientId]
        seen.push({ brokerId, clientId, localClosed: local?.closed })
      }),
    )
    aedes = rig.aedes
    t.teardown(() => stop(rig))
    const c = await connect(rig, { clientId: 'pin-announce' })
    await until(() => seen.length > 0, 'the announcement')
    t.match(seen[0], { brokerId: rig.aedes.id, clientId: 'pin-announce' }, 'this node announces its new client')

    // Another node announces the same client id: aedes closes ours, after our listener has run.
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()))
    ;(emitterOf(rig.aedes) as unknown as { emit(p: object, cb: () => void): void }).emit(
      { topic: '$SYS/other-node/new/clients', payload: Buffer.from('pin-announce') },
      () => {},
    )
    await closed
    t.match(
      seen[1],
      { brokerId: 'other-node', clientId: 'pin-announce', localClosed: false },
      'our listener saw the local client still open',
    )
  },
)
