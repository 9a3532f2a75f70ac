// Screens render in worker threads of their own (render-worker.ts), a few at a time, each bounded
// in time (the worker is ended when a job overruns) and in memory (worker_threads resourceLimits:
// Node ends a worker whose heap passes it). A runaway template costs its screen an error and one
// worker restart; other screens' renders wait at most one job per worker, the event loop nothing.
import { fileURLToPath } from 'node:url'
import { Worker, type WorkerOptions } from 'node:worker_threads'
import type { RenderFailure, RenderJob, RenderResult } from './render-job.js'

export type RenderPool = {
  /** Renders in a worker; answers the PNG or the failure as data (never throws for a template's fault). */
  render(job: RenderJob): Promise<{ ok: true; png: Buffer; html: string; css?: string } | ({ ok: false } & RenderFailure)>
  readonly running: number
  readonly waiting: number
  close(): Promise<void>
}

/** The worker's module beside this one: .ts when run from the sources, .js beside the bundle (scripts/build.mjs). */
const fromSources = import.meta.url.endsWith('.ts')
const workerFile = new URL(fromSources ? './render-worker.ts' : './screen-render-worker.js', import.meta.url)

/**
 * Run from the sources, the worker registers tsx itself before loading its module: in Node 20 a
 * worker does not get the parent's `--import=tsx` loader in place for the module it starts with.
 */
function startWorker(options: WorkerOptions): Worker {
  if (!fromSources) return new Worker(workerFile, options)
  const path = JSON.stringify(fileURLToPath(workerFile))
  return new Worker(`require('tsx/cjs'); require(${path})`, { ...options, eval: true })
}

/** Renders waiting beyond this are refused (SCREEN_BUSY) rather than queued without end. */
const MAX_WAITING = 2000

type Job = { job: RenderJob; resolve: (r: Awaited<ReturnType<RenderPool['render']>>) => void }
type Slot = { worker: Worker; ready: boolean; gone?: boolean; busy?: { id: number; job: Job; timer: NodeJS.Timeout } }

export function createRenderPool(opts: { threads: number; timeoutMs: number; memoryMb: number }): RenderPool {
  const slots: Slot[] = []
  const queue: Job[] = []
  let nextId = 1
  let closed = false

  function spawn(): Slot {
    const worker = startWorker({
      resourceLimits: { maxOldGenerationSizeMb: opts.memoryMb, maxYoungGenerationSizeMb: Math.max(4, Math.round(opts.memoryMb / 8)) },
    })
    worker.unref()
    const slot: Slot = { worker, ready: false }
    worker.on('message', (msg: { id: number; result: RenderResult } | { ready: true }) => {
      if ('ready' in msg) {
        slot.ready = true
        return pump()
      }
      const busy = slot.busy
      if (!busy || busy.id !== msg.id) return
      clearTimeout(busy.timer)
      slot.busy = undefined
      const r = msg.result
      busy.job.resolve(r.ok ? { ...r, png: Buffer.from(r.png.buffer, r.png.byteOffset, r.png.byteLength) } : r)
      pump()
    })
    worker.on('error', (err: Error & { code?: string }) => {
      // ERR_WORKER_OUT_OF_MEMORY: the heap limit was reached.
      const memory = err.code === 'ERR_WORKER_OUT_OF_MEMORY'
      fail(
        slot,
        memory ? 'SCREEN_RENDER_MEMORY' : 'SCREEN_RENDER_FAILED',
        memory ? 'the render used more memory than a screen may' : err.message,
      )
    })
    worker.on('exit', () => fail(slot, 'SCREEN_RENDER_FAILED', 'the render worker stopped'))
    slots.push(slot)
    return slot
  }

  /** The slot's job fails and the slot is dropped (its worker ended); the next job gets a fresh worker. */
  function fail(slot: Slot, code: RenderFailure['code'], message: string) {
    // 'error' is followed by 'exit', and a terminated worker exits too: a slot fails once.
    if (slot.gone) return
    slot.gone = true
    const at = slots.indexOf(slot)
    if (at !== -1) slots.splice(at, 1)
    const busy = slot.busy
    slot.busy = undefined
    if (busy) {
      clearTimeout(busy.timer)
      busy.job.resolve({ ok: false, code, message })
    } else if (!slot.ready && !closed) {
      // A worker that cannot start would be started again without end: the job waiting longest fails instead.
      queue.shift()?.resolve({ ok: false, code: 'SCREEN_RENDER_FAILED', message: `the render worker could not start: ${message}` })
    }
    void slot.worker.terminate()
    pump()
  }

  function pump() {
    while (!closed && queue.length) {
      const slot = slots.find((s) => s.ready && !s.busy)
      if (!slot) {
        // A worker still starting takes the next job when it is ready.
        if (slots.length < opts.threads && !slots.some((s) => !s.ready)) spawn()
        return
      }
      const job = queue.shift()!
      const id = nextId++
      const s = slot
      const timer = setTimeout(
        () => fail(s, 'SCREEN_RENDER_TIMEOUT', `the render took longer than ${opts.timeoutMs} ms and was stopped`),
        opts.timeoutMs,
      )
      s.busy = { id, job, timer }
      s.worker.postMessage({ id, job: job.job })
    }
  }

  return {
    render(job) {
      if (closed) return Promise.resolve({ ok: false, code: 'SCREEN_BUSY', message: 'the service is shutting down' })
      if (queue.length >= MAX_WAITING)
        return Promise.resolve({ ok: false, code: 'SCREEN_BUSY', message: 'too many screens are waiting to render' })
      return new Promise((resolve) => {
        queue.push({ job, resolve })
        pump()
      })
    },
    get running() {
      return slots.filter((s) => s.busy).length
    },
    get waiting() {
      return queue.length
    },
    async close() {
      closed = true
      for (const j of queue.splice(0)) j.resolve({ ok: false, code: 'SCREEN_BUSY', message: 'the service is shutting down' })
      await Promise.all(slots.splice(0).map((s) => s.worker.terminate()))
    },
  }
}
