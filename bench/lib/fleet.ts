// Drives a fleet worker (bench/lib/fleet-worker.ts): a process of raw MQTT devices.
import { fileURLToPath } from 'node:url'
import { startChild, type Child } from './child.js'
import type { Cred } from './ours.js'

const WORKER = fileURLToPath(new URL('./fleet-worker.ts', import.meta.url))

export type ConnectResult = { connected: number; failed: number; codes: Record<string, number>; start: number; end: number }
type WaitResult = { received: number; duplicates: number; lastAt: number; p50: number; p99: number; max: number }

export type Fleet = {
  pid: number
  connect(opts: {
    /** One broker, or `ports` of a cluster (device i connects to ports[i mod K]). */
    port?: number
    ports?: number[]
    creds: Cred[]
    clean: boolean
    subscribe: string[] | null
    concurrency: number
    localAddresses?: string[]
    /** How long the whole connect may take (5 minutes unless given). */
    timeoutMs?: number
  }): Promise<ConnectResult>
  expect(total: number): Promise<void>
  wait(timeoutMs: number): Promise<WaitResult>
  disconnect(polite: boolean): Promise<number>
  stop(): Promise<void>
}

/** `openFiles`: the soft limit to raise this worker to, for more than ~1,000 devices where the default is 1,024. */
export async function startFleet(opts: { openFiles?: number } = {}): Promise<Fleet> {
  const child: Child = await startChild(WORKER, { execArgv: ['--max-old-space-size=2048'], openFiles: opts.openFiles })
  return {
    pid: child.pid,
    connect: ({ timeoutMs, ...opts }) => child.call<ConnectResult>('connect', opts, timeoutMs ?? 300_000),
    expect: async (total) => void (await child.call('expect', { total })),
    wait: (timeoutMs) => child.call<WaitResult>('wait', { timeoutMs }, timeoutMs + 30_000),
    disconnect: (polite) => child.call<number>('disconnect', { polite }, 120_000),
    stop: () => child.stop({ graceful: true }),
  }
}
