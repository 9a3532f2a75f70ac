// What every scenario gets from the runner, and the scenario shape.
import type { ScenarioResult } from './report.js'

export type Context = {
  quick: boolean
  /** A temporary folder for this run (data folders, password files); removed at the end. */
  workDir: string
  log(message: string): void
  /**
   * A resource several scenarios use (our embedded server, the 1,000-device rig), made on first
   * use and disposed by the runner once no remaining scenario lists its key in `uses`.
   */
  shared<T>(key: string, create: () => Promise<T>, dispose: (value: T) => Promise<void>): Promise<T>
}

export type Scenario = {
  name: string
  /** One line for `npm run bench -- --list` and the README. */
  summary: string
  /**
   * Runs only when named with --only; a full run lists it as skipped with this reason (a
   * scenario that takes longer than all the others together).
   */
  onlyWhenNamed?: string
  /** Keys of shared resources (see Context.shared) this scenario may use. */
  uses?: string[]
  /**
   * Slow setup (server starts) for every selected scenario runs at once before the first
   * scenario, so starts overlap each other but never a measurement.
   */
  prepare?(ctx: Context): Promise<unknown>
  run(ctx: Context): Promise<ScenarioResult>
}

/** The rounds alternate sides: ours, peer, ours, peer … */
export async function alternate(
  rounds: number,
  ours: (round: number) => Promise<void>,
  peer: ((round: number) => Promise<void>) | null,
): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await ours(i)
    if (peer) await peer(i)
  }
}

/** A JSON body of about `bytes` bytes carrying a sequence number and the send time (ms, sub-ms precision). */
export function timedBody(n: number, bytes: number) {
  const t = performance.timeOrigin + performance.now()
  const base = JSON.stringify({ n, t, pad: '' }).length
  return { n, t, pad: 'x'.repeat(Math.max(0, bytes - base)) }
}
