// Display conversions run in worker threads (convert-worker.ts), never on the event loop, and are
// handed to the workers one account at a time in turn: each account with conversions waiting has
// its own queue, and a freed worker takes the next conversion of the next account in the rotation.
// One account sending a hundred pictures delays another account's one by at most one conversion
// per busy worker, not by the hundred; requests that convert nothing are not delayed at all.
import { Piscina } from 'piscina'
import { AppError } from '../errors.js'
import { ImageInputError } from './convert.js'
import type { DisplayProfile, Variant } from './profiles.js'

/** What the worker is given (structured-cloned: the input is copied, the caller keeps its buffer). */
export type ConversionRequest = { input: Uint8Array; profile: DisplayProfile }
/** What the worker answers: the variants, or the error as data (a thrown AppError would lose its status crossing the thread). */
export type ConversionResult =
  | { ok: true; variants: Variant[] }
  | { ok: false; error: { message: string; statusCode?: number; code?: string; input?: boolean } }

export type ConversionPool = {
  /** Converts `input` for `profile` in a worker, queued behind `owner`'s own earlier conversions only. */
  convert(owner: string, input: Buffer, profile: DisplayProfile): Promise<Variant[]>
  /** Worker threads (at most this many conversions at once). */
  readonly threads: number
  readonly running: number
  readonly waiting: number
  /** Finishes what was started, refuses what still waits, and ends the workers. */
  close(): Promise<void>
}

type Job = { input: Buffer; profile: DisplayProfile; resolve: (v: Variant[]) => void; reject: (e: unknown) => void }

/**
 * The worker's module beside this one: src/images/convert-worker.ts when the service runs from its
 * sources (tsx, whose loader the worker inherits through execArgv), dist/convert-worker.js beside
 * the bundle (scripts/build.mjs builds it as its own entry).
 */
const workerFile = new URL(import.meta.url.endsWith('.ts') ? './convert-worker.ts' : './convert-worker.js', import.meta.url)

/** Idle workers end after this long: a service that converts nothing holds no threads. */
const IDLE_MS = 30_000

export function createConversionPool(opts: { threads: number }): ConversionPool {
  const { threads } = opts
  if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`threads must be a positive integer, got ${threads}`)
  const piscina = new Piscina<ConversionRequest, ConversionResult>({
    filename: workerFile.href,
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: IDLE_MS,
  })
  /** Each account's waiting conversions; the Map's order is the rotation (an account served goes to the back). */
  const queues = new Map<string, Job[]>()
  let running = 0
  let waiting = 0
  const inFlight = new Set<Promise<void>>()
  let closed = false

  function pump() {
    while (running < threads && queues.size) {
      const [owner, jobs] = queues.entries().next().value as [string, Job[]]
      const job = jobs.shift()!
      queues.delete(owner)
      if (jobs.length) queues.set(owner, jobs)
      waiting--
      running++
      // Only as many as there are workers are handed over, so piscina's own queue stays empty and
      // the order is the rotation's.
      const task = piscina
        .run({ input: job.input, profile: job.profile })
        .then((result) => (result.ok ? job.resolve(result.variants.map(asBuffers)) : job.reject(asError(result.error))), job.reject)
        .finally(() => {
          inFlight.delete(task)
          running--
          pump()
        })
      inFlight.add(task)
    }
  }

  return {
    convert(owner, input, profile) {
      if (closed) return Promise.reject(new Error('the conversion pool is closed'))
      return new Promise<Variant[]>((resolve, reject) => {
        const jobs = queues.get(owner)
        if (jobs) jobs.push({ input, profile, resolve, reject })
        else queues.set(owner, [{ input, profile, resolve, reject }])
        waiting++
        pump()
      })
    },
    threads,
    get running() {
      return running
    },
    get waiting() {
      return waiting
    },
    async close() {
      closed = true
      const gone = new Error('the service is shutting down')
      for (const jobs of queues.values()) for (const job of jobs) job.reject(gone)
      queues.clear()
      waiting = 0
      // Piscina's close ends a worker whose task it has not handed over yet (one still starting):
      // what was started is awaited here first.
      await Promise.allSettled([...inFlight])
      await piscina.close()
    },
  }
}

/** The worker's Buffers arrive as plain Uint8Arrays: the same bytes, viewed as Buffers again. */
function asBuffers(v: Variant): Variant {
  const data = v.data as Uint8Array
  return { ...v, data: Buffer.from(data.buffer, data.byteOffset, data.byteLength) }
}

function asError(e: Extract<ConversionResult, { ok: false }>['error']): Error {
  if (e.input) return new ImageInputError(e.message)
  if (e.statusCode && e.code) return new AppError(e.statusCode, e.code, e.message)
  return new Error(e.message)
}
