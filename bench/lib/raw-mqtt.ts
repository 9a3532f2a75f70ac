// A minimal MQTT 3.1.1 device on a plain TCP socket (mqtt-packet for framing): CONNECT, SUBSCRIBE,
// PUBACK for QoS 1 deliveries, DISCONNECT. Tens of thousands of these cost far less than mqtt.js
// clients, so the load generator is less of a bottleneck on a two-core machine.
import { connect as tcpConnect, type Socket } from 'node:net'
import mqttPacket, { type IPublishPacket, type Packet } from 'mqtt-packet'

export type DeviceOptions = {
  host: string
  port: number
  /** Source address (127.0.0.x) so one machine can open more than one port range of connections. */
  localAddress?: string
  clientId: string
  username: string
  password: string
  clean: boolean
  keepalive: number
  timeoutMs: number
}

export class RawDevice {
  socket?: Socket
  private pending = new Map<number, (p: Packet) => void>()
  private connack?: (p: Packet) => void
  private nextId = 1
  closed = false
  onPublish?: (p: IPublishPacket) => void

  constructor(readonly opts: DeviceOptions) {}

  /** Resolves with the CONNACK return code (0 = accepted); rejects on socket errors or timeout. */
  connect(): Promise<number> {
    const o = this.opts
    return new Promise((resolve, reject) => {
      const socket = tcpConnect({ host: o.host, port: o.port, localAddress: o.localAddress })
      this.socket = socket
      socket.setNoDelay(true)
      const parser = mqttPacket.parser({ protocolVersion: 4 })
      const timer = setTimeout(() => fail(new Error('connect timeout')), o.timeoutMs)
      const fail = (err: Error) => {
        clearTimeout(timer)
        this.closed = true
        socket.destroy()
        reject(err)
      }
      socket.on('error', (err) => {
        this.closed = true
        if (this.connack) fail(err)
      })
      socket.on('close', () => {
        this.closed = true
        if (this.connack) fail(new Error('closed before CONNACK'))
      })
      parser.on('packet', (p: Packet) => this.packet(p))
      parser.on('error', (err: Error) => socket.destroy(err))
      socket.on('data', (chunk) => parser.parse(chunk))
      this.connack = (p) => {
        clearTimeout(timer)
        this.connack = undefined
        resolve((p as { returnCode?: number }).returnCode ?? 0)
      }
      socket.write(
        mqttPacket.generate({
          cmd: 'connect',
          protocolId: 'MQTT',
          protocolVersion: 4,
          clientId: o.clientId,
          clean: o.clean,
          keepalive: o.keepalive,
          username: o.username,
          password: Buffer.from(o.password),
        }),
      )
    })
  }

  /** One SUBSCRIBE for all `topics`; resolves with the granted QoS of each (128 = refused). */
  subscribe(topics: string[], qos: 0 | 1 = 1): Promise<number[]> {
    const messageId = this.id()
    return new Promise((resolve, reject) => {
      if (!this.socket || this.closed) return reject(new Error('not connected'))
      this.pending.set(messageId, (p) => resolve((p as { granted: number[] }).granted))
      this.socket.write(mqttPacket.generate({ cmd: 'subscribe', messageId, subscriptions: topics.map((topic) => ({ topic, qos })) }))
    })
  }

  /** A polite DISCONNECT, then the socket closes. */
  disconnect(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.socket || this.closed) return resolve()
      this.socket.once('close', () => resolve())
      this.socket.end(mqttPacket.generate({ cmd: 'disconnect' }))
    })
  }

  destroy(): void {
    this.closed = true
    this.socket?.destroy()
  }

  private id(): number {
    const id = this.nextId
    this.nextId = (this.nextId % 65535) + 1
    return id
  }

  private packet(p: Packet): void {
    switch (p.cmd) {
      case 'connack':
        this.connack?.(p)
        return
      case 'suback': {
        const done = this.pending.get(p.messageId!)
        this.pending.delete(p.messageId!)
        done?.(p)
        return
      }
      case 'publish':
        if (p.qos === 1) this.socket?.write(mqttPacket.generate({ cmd: 'puback', messageId: p.messageId! }))
        this.onPublish?.(p)
        return
      default:
        return
    }
  }
}

/** Runs `fn` over `items` with at most `limit` running at once. */
export async function bounded<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  async function lane() {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i]!, i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return out
}
