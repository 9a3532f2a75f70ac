// Helpers for the simulator's tests: await a device's events, call the service as a user.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SimDevice, SimDeviceEvents } from '../../device-sim/index.js'
import type { TestApp } from '../helpers/app.js'

type Tap = { teardown(fn: () => unknown): void }

/** The next `event` of `dev` (matching `accept`), or an error naming what did not happen. */
export function nextEvent<K extends keyof SimDeviceEvents>(
  dev: SimDevice,
  event: K,
  accept: (...args: SimDeviceEvents[K]) => boolean = () => true,
  timeoutMs = 15_000,
): Promise<SimDeviceEvents[K][0]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      dev.off(event, listener as never)
      reject(new Error(`${dev.name}: no "${String(event)}" event within ${timeoutMs} ms`))
    }, timeoutMs)
    const listener = (...args: SimDeviceEvents[K]) => {
      if (!accept(...args)) return
      clearTimeout(timer)
      dev.off(event, listener as never)
      resolve(args[0])
    }
    dev.on(event, listener as never)
  })
}

export async function tempDir(t: Tap, prefix = 'sim-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** A JSON call to the service with a user's bearer token. */
export async function call<T = Record<string, unknown>>(
  svc: TestApp | string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const base = typeof svc === 'string' ? svc : svc.url
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  })
  return { status: res.status, body: (await res.json()) as T }
}

export type DeviceDetail = { id: string; name: string; isSynced: boolean; isActive: boolean; info: { firmware?: string } }
export type EventRecord = { type: string; data: Record<string, unknown> }

/**
 * A TCP relay in front of the broker, standing for the network between a device and the service:
 * while it is down it drops every connection at once, so a test knows the device is still
 * reconnecting when it sends something.
 */
export async function startRelay(t: Tap, targetPort: number): Promise<{ port: number; down(): void; up(): void }> {
  const { createServer, connect } = await import('node:net')
  let open = true
  const sockets = new Set<import('node:net').Socket>()
  const server = createServer((inbound) => {
    if (!open) return inbound.destroy()
    const outbound = connect(targetPort, '127.0.0.1')
    for (const s of [inbound, outbound]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {
        inbound.destroy()
        outbound.destroy()
      })
    }
    inbound.pipe(outbound).pipe(inbound)
    inbound.on('close', () => outbound.destroy())
    outbound.on('close', () => inbound.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return {
    port: (server.address() as { port: number }).port,
    down() {
      open = false
    },
    up() {
      open = true
    },
  }
}
