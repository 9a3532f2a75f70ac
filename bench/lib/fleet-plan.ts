// How a fleet of N devices is laid out over processes when each process may hold at most
// ~20,000 open files (this machine's hard limit): service instances and load generators alike.

/** Sockets one process is given at most: 20,000 open files less what a service holds besides its devices (Redis, PostgreSQL, logs, modules). */
export const SOCKETS_PER_PROCESS = 18_000

export type FleetPlan = {
  devices: number
  /** Service instances in the cluster (at least two: one instance is what fleet-scale measures). */
  instances: number
  /** Load-generator processes. */
  workers: number
}

export function planFleet(devices: number, opts: { instances?: number; perProcess?: number } = {}): FleetPlan {
  if (!Number.isInteger(devices) || devices < 1) throw new Error(`devices must be a positive integer, not ${devices}`)
  const per = opts.perProcess ?? SOCKETS_PER_PROCESS
  const needed = Math.ceil(devices / per)
  if (opts.instances !== undefined && opts.instances < needed)
    throw new Error(`${opts.instances} instances cannot hold ${devices} devices at ${per} each (${needed} needed)`)
  return { devices, instances: opts.instances ?? Math.max(2, needed), workers: needed }
}

/** `xs` in `k` contiguous parts whose sizes differ by at most one (worker w drives part w). */
export function split<T>(xs: readonly T[], k: number): T[][] {
  const base = Math.floor(xs.length / k)
  const extra = xs.length % k
  const out: T[][] = []
  let at = 0
  for (let i = 0; i < k; i++) {
    const n = base + (i < extra ? 1 : 0)
    out.push(xs.slice(at, at + n))
    at += n
  }
  return out
}

/** How many of `n` devices, dealt i mod k, land on instance `j`. */
export const dealtTo = (n: number, k: number, j: number) => Math.floor(n / k) + (j < n % k ? 1 : 0)
