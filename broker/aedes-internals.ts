// Every place the broker reaches past aedes' typed API, named here in one module so an aedes
// upgrade has one file to check: test/broker/aedes-internals.test.ts pins each field and
// behaviour below against the installed aedes (and the mqtt-packet parser it uses), and fails
// when one is gone or has changed shape. Written against aedes 1.2.
import type { Aedes, Client, PublishPacket } from 'aedes'

/** A message as aedes' persistence streams it back. */
export type StoredPacket = { topic?: string; payload?: Buffer | Uint8Array }

/** The part of aedes' persistence (aedes-persistence's interface) the service reads directly. */
export type SessionStore = {
  /** A persistent session's queued messages. */
  outgoingStream(client: { id: string }): AsyncIterable<StoredPacket>
  /** Retained messages matching any of `patterns`. */
  createRetainedStreamCombi(patterns: string[]): AsyncIterable<StoredPacket>
  /** Stored wills (of clients whose node may have died). */
  streamWill(brokers: object): AsyncIterable<{ clientId: string; brokerId: string }>
  delWill(client: { id: string; brokerId: string }): Promise<unknown>
  /** An inbound QoS 2 message stored awaiting its PUBREL; rejects when there is none with that id. */
  incomingGetPacket(client: Client, packet: { messageId?: number }): Promise<unknown>
}

/** aedes' message emitter (mqemitter, or mqemitter-redis in a cluster). */
export type Emitter = {
  on(topic: string, fn: (packet: { topic: string; payload: Buffer }, cb: () => void) => void): void
}

/** mqtt-packet's parser, one per client, as aedes feeds it the socket's bytes. */
export type PacketParser = {
  emit(event: string | symbol, ...args: unknown[]): boolean
  /** Reads a packet's remaining length from its fixed header; true once it is known. */
  _parseLength(): boolean
  /** The packet being parsed; `length` is its remaining length. */
  packet: { length: number }
  /** Fails the parse: the parser emits 'error', on which aedes closes the client. */
  _emitError(err: Error): void
}

/** How aedes hands one message to a client (deliverQoS for QoS > 0, deliver0 for QoS 0). */
export type Deliver = (packet: { brokerId?: string; brokerCounter?: number }, cb: () => void) => void

type ClientInternals = {
  _will: PublishPacket | null
  will: PublishPacket | null
  _disconnected: boolean
  _parser: PacketParser
  subscriptions: Record<string, { qos: number }>
  duplicates: object
  deliverQoS: Deliver
  deliver0: Deliver
  connackSent: boolean
}
type BrokerInternals = { clients: Record<string, Client>; persistence: SessionStore; mq: Emitter }

const client = (c: Client) => c as unknown as ClientInternals
const broker = (a: Aedes) => a as unknown as BrokerInternals

/** The clients this node holds, by client id (aedes.clients). */
export const connectedClients = (aedes: Aedes): Record<string, Client> => broker(aedes).clients

/** The broker's persistence, as passed in or aedes' in-memory default (aedes.persistence). */
export const sessionStore = (aedes: Aedes): SessionStore => broker(aedes).persistence

/** The broker's emitter (aedes.mq), shared by every node of a cluster. */
export const emitterOf = (aedes: Aedes): Emitter => broker(aedes).mq

/**
 * aedes announces every client that registers, on any node, on $SYS/{broker id}/new/clients with
 * the client id as payload; its own listener closes a local client of the same id. A listener
 * added on the emitter before the broker is created runs before aedes' own.
 */
export function onClientRegistered(mq: Emitter, fn: (brokerId: string, clientId: string) => void): void {
  mq.on('$SYS/+/new/clients', (packet, cb) => {
    fn(packet.topic.split('/')[1] ?? '', packet.payload.toString('utf8'))
    cb()
  })
}

/** The will of a connecting client, from its CONNECT; during authenticate, before aedes stores it (client._will). */
export const pendingWill = (c: Client): PublishPacket | null => client(c)._will

/** Replaces a connecting client's will: set during authenticate, it is the will aedes stores and publishes. */
export function setPendingWill(c: Client, will: PublishPacket): void {
  client(c)._will = will
}

/** The will aedes holds for a connected client (client.will): the very packet it publishes when the client is lost. */
export const activeWill = (c: Client): PublishPacket | null => client(c).will

/**
 * Marks a client as having sent DISCONNECT (client._disconnected): when it closes, aedes drops its
 * will (and deletes it from the persistence) instead of publishing it.
 */
export function dropWillOnClose(c: Client): void {
  client(c)._disconnected = true
}

/** Whether the client ended with a DISCONNECT packet (or dropWillOnClose). */
export const sentDisconnect = (c: Client): boolean => client(c)._disconnected === true

/** The client's subscriptions by filter (client.subscriptions), restored ones of a resumed session included. */
export const subscriptionsOf = (c: Client): Record<string, { qos: number }> => client(c).subscriptions ?? {}

/** The client's packet parser (client._parser): its 'packet' events are what aedes handles. */
export const parserOf = (c: Client): PacketParser => client(c)._parser

/** Whether aedes has written the client's CONNACK (client.connackSent). */
export const connackSent = (c: Client): boolean => client(c).connackSent === true

/**
 * Replaces the client's duplicate check (client.duplicates): aedes delivers a message when
 * `duplicates[brokerId]` is below its broker counter, and then stores the counter there.
 */
export function setDuplicates(c: Client, duplicates: object): void {
  client(c).duplicates = duplicates
}

/**
 * Wraps both of the client's delivery functions (deliverQoS and deliver0). aedes takes them from
 * the client when a subscription is made, so wrap before any is made or restored (preConnect).
 */
export function wrapDelivery(c: Client, wrap: (deliver: Deliver) => Deliver): void {
  const ci = client(c)
  ci.deliverQoS = wrap(ci.deliverQoS)
  ci.deliver0 = wrap(ci.deliver0)
}
