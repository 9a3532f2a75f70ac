// Real mqtt.js clients against the app's broker on loopback.
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import type { TestApp } from './app.js'

export function mqttUrl(svc: TestApp): string {
  if (svc.app.mqttPort === undefined) throw new Error('broker not listening')
  return `mqtt://127.0.0.1:${svc.app.mqttPort}`
}

/** Connects and resolves on CONNACK 0; rejects with the CONNACK error, or when the connection closes first. Never reconnects. */
export function connect(url: string, opts: IClientOptions): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    // mqtt.js' own 30 s for the CONNACK: forty devices connecting at once on a loaded 2-core
    // machine have taken over 5 s; a limit for a hang, not a speed check.
    const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 30_000, protocolVersion: 4, ...opts })
    let connected = false
    client.once('connect', () => {
      connected = true
      resolve(client)
    })
    client.once('error', (err) => {
      client.end(true)
      reject(err)
    })
    // A connect timeout or a dropped socket ends in 'close' without an 'error'.
    client.once('close', () => {
      if (!connected) reject(new Error(`the connection to ${url} closed before a CONNACK`))
    })
  })
}

export function close(client: MqttClient): Promise<void> {
  return new Promise((resolve) => client.end(false, {}, () => resolve()))
}

/** The next message on `topic` (exact match), as parsed JSON. */
export function nextMessage<T = Record<string, unknown>>(
  client: MqttClient,
  topic: string,
  timeoutMs = 15_000,
): Promise<{ payload: T; retain: boolean }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('message', onMessage)
      reject(new Error(`no message on ${topic} within ${timeoutMs} ms`))
    }, timeoutMs)
    function onMessage(t: string, payload: Buffer, packet: { retain: boolean }) {
      if (t !== topic) return
      clearTimeout(timer)
      client.off('message', onMessage)
      resolve({ payload: JSON.parse(payload.toString('utf8')) as T, retain: packet.retain })
    }
    client.on('message', onMessage)
  })
}

export function subscribe(client: MqttClient, topic: string, qos: 0 | 1 | 2 = 1, timeoutMs = 10_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no SUBACK for ${topic} within ${timeoutMs} ms`)), timeoutMs)
    client.subscribe(topic, { qos }, (err, granted) => {
      clearTimeout(timer)
      if (err) reject(err)
      else resolve(granted?.[0]?.qos ?? -1)
    })
  })
}

/** The SUBACK's return codes as the broker sent them (mqtt.js turns any 0x80 into an error). */
export function subackCodes(client: MqttClient, filters: string[], qos: 0 | 1 | 2 = 1): Promise<number[]> {
  return new Promise((resolve) => {
    const onPacket = (packet: { cmd: string; granted?: unknown }) => {
      if (packet.cmd !== 'suback') return
      client.off('packetreceive', onPacket)
      resolve(packet.granted as number[])
    }
    client.on('packetreceive', onPacket)
    // An array, not an object: a SUBSCRIBE may name a filter twice.
    client.subscribe(filters, { qos }, () => {})
  })
}

/** Polls `check` until it returns a truthy value (for effects written asynchronously). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 50))
  }
}
