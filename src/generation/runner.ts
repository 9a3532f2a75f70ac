// Drives generation jobs: starts them with their provider, polls with capped exponential
// backoff (or the provider's Retry-After), stops at the deadline, caps concurrency per
// provider, and, because every job is a row with a lease, resumes unfinished jobs after a
// restart (the lease of a crashed runner simply expires).
import type { Database } from '../db/client.js'
import { ProviderError, type GenerationInput, type ImageProvider, type PollResult, type ProviderOutput } from './provider.js'
import { claimDueJobs, countStartedJobs, nextJobDueAt, updateJob, type JobRow } from './repository.js'

export type RunnerOptions = {
  tickMs: number
  leaseMs: number
  /** First poll delay; doubles per poll up to `maxBackoffMs`. */
  baseBackoffMs: number
  maxBackoffMs: number
  /**
   * Jobs per provider at once: started at the provider and not finished (counted across every
   * instance from the table), and in this process's hands.
   */
  concurrency: number
}

export type RunnerHooks = {
  /** Turns the provider's outputs into stored images and delivers them; returns the image id. */
  succeed(job: JobRow, outputs: ProviderOutput[]): Promise<string>
  /** Ends the job as failed or canceled, refunding its price; at most once per job. */
  fail(job: JobRow, status: 'failed' | 'canceled', error?: { code: string; message: string }): Promise<void>
  log: { warn: (o: object | string, m?: string) => void; error: (o: object | string, m?: string) => void }
}

/**
 * While a job's output is downloaded, stored and delivered, its lease is this far ahead and renewed
 * every third of it: a runner that dies meanwhile (a crash, a kill -9) lets another, or itself
 * restarted, take the job up within this long, instead of after the job's whole deadline.
 */
export const SUCCEED_HOLD_MS = 30_000

export function backoffMs(attempt: number, opts: Pick<RunnerOptions, 'baseBackoffMs' | 'maxBackoffMs'>): number {
  return Math.min(opts.maxBackoffMs, opts.baseBackoffMs * 2 ** Math.min(attempt, 20))
}

/** The longest an idle runner sleeps before it looks at the table again. */
const IDLE_MAX_MS = 5000

export function createRunner(db: Database, providers: Map<string, ImageProvider>, opts: RunnerOptions, hooks: RunnerHooks) {
  const inFlight = new Map<string, number>()
  const working = new Set<Promise<void>>()
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  let current: Promise<void> | undefined
  let ticking = false

  const providerJob = (job: JobRow) => ({
    providerJobId: job.providerJobId ?? '',
    state: job.providerState,
    input: job.input as unknown as GenerationInput,
  })

  async function handle(job: JobRow): Promise<void> {
    const provider = providers.get(job.provider)
    if (!provider)
      return hooks.fail(job, 'failed', { code: 'PROVIDER_NOT_CONFIGURED', message: `provider ${job.provider} is not configured` })
    if (job.deadlineAt.getTime() <= Date.now()) {
      if (job.providerJobId) await provider.cancel(providerJob(job)).catch(() => {})
      return hooks.fail(job, 'failed', { code: 'TIMEOUT', message: 'the provider did not finish before the deadline' })
    }
    const live: Array<JobRow['status']> = ['queued', 'running']
    /** Never past the deadline: a long Retry-After must not hold a job beyond it. */
    const pollAt = (waitMs: number) => new Date(Math.min(Date.now() + waitMs, job.deadlineAt.getTime()))
    try {
      if (!job.providerJobId) {
        const started = await provider.start(job.input as unknown as GenerationInput)
        const pollNow = started.pollAfterMs === 0
        const recorded = await updateJob(db, job.id, live, {
          status: 'running',
          providerJobId: started.providerJobId,
          providerState: started.state ?? {},
          startedAt: new Date(),
          attempts: 0,
          nextPollAt: pollAt(started.pollAfterMs ?? opts.baseBackoffMs),
          // Polled in this step: the claim is kept, so no other runner polls it meanwhile.
          leaseUntil: pollNow ? job.leaseUntil : null,
        })
        // Canceled while the provider was starting it: stop it there too.
        if (!recorded)
          await provider
            .cancel({ providerJobId: started.providerJobId, state: started.state ?? {}, input: job.input as unknown as GenerationInput })
            .catch(() => {})
        // The answer is ready now (the local provider): a tick's wait and a claim saved per job.
        else if (pollNow) return handle(recorded)
        return
      }
      const result: PollResult = await provider.poll(providerJob(job))
      if (result.status === 'failed') return hooks.fail(job, 'failed', result.error)
      if (result.status === 'queued' || result.status === 'running') {
        await updateJob(db, job.id, live, {
          status: 'running',
          progress: Math.max(job.progress, Math.min(99, Math.round(result.progress ?? job.progress))),
          providerState: result.state ? { ...job.providerState, ...result.state } : job.providerState,
          attempts: job.attempts + 1,
          nextPollAt: pollAt(backoffMs(job.attempts + 1, opts)),
          leaseUntil: null,
        })
        return
      }
      if (result.status === 'succeeded') {
        // Downloading and converting can outlast the claim's lease: hold the job meanwhile, briefly
        // and renewed, so the hold ends soon after this runner does. (Once the job has succeeded
        // the renewal matches no row: it only updates a job still queued or running.)
        const hold = () => updateJob(db, job.id, live, { leaseUntil: new Date(Date.now() + SUCCEED_HOLD_MS) })
        await hold()
        const renew = setInterval(
          () => void hold().catch((err) => hooks.log.warn({ err, jobId: job.id }, 'could not renew a generation job lease')),
          SUCCEED_HOLD_MS / 3,
        )
        try {
          await hooks.succeed(job, result.outputs)
        } finally {
          clearInterval(renew)
        }
        return
      }
      return hooks.fail(job, 'canceled', { code: 'PROVIDER_CANCELED', message: 'the provider canceled the job' })
    } catch (err) {
      if (err instanceof ProviderError && err.retryable) {
        const wait = Math.max(err.retryAfterMs ?? 0, backoffMs(job.attempts + 1, opts))
        await updateJob(db, job.id, live, {
          attempts: job.attempts + 1,
          nextPollAt: pollAt(wait),
          leaseUntil: null,
          errorCode: err.code,
          errorMessage: err.message,
        })
        return
      }
      const e = err as Error & { code?: string }
      hooks.log.warn({ err, jobId: job.id }, 'generation job failed')
      return hooks.fail(job, 'failed', {
        code: err instanceof ProviderError ? err.code : 'GENERATION_FAILED',
        message: e.message || 'generation failed',
      })
    }
  }

  /** Jobs this process is starting at a provider right now (not yet counted in the table). */
  const starting = new Map<string, number>()

  function take(name: string, job: JobRow) {
    inFlight.set(name, (inFlight.get(name) ?? 0) + 1)
    const fresh = !job.providerJobId
    if (fresh) starting.set(name, (starting.get(name) ?? 0) + 1)
    const p = handle(job)
      .catch((err) => hooks.log.error({ err, jobId: job.id }, 'generation runner error'))
      .finally(() => {
        inFlight.set(name, (inFlight.get(name) ?? 1) - 1)
        if (fresh) starting.set(name, (starting.get(name) ?? 1) - 1)
        working.delete(p)
        // A finished job frees a slot: look for more work at once.
        poke()
      })
    working.add(p)
  }

  /** A poke that came while a tick was under way: that tick may have looked before the new job existed. */
  let again = false

  function tick(): Promise<void> {
    if (stopped) return Promise.resolve()
    if (ticking) {
      again = true
      return current ?? Promise.resolve()
    }
    ticking = true
    again = false
    current = claim()
      // Another look soon only where one may find more: a claim that filled its slots, or a poke
      // that came meanwhile. Otherwise everything due was taken, and the table says when the next is.
      .then((full) => (full || again ? opts.tickMs : idleDelay()))
      .then(
        (delay) => schedule(delay),
        () => schedule(opts.tickMs),
      )
      .finally(() => {
        ticking = false
      })
    return current
  }

  /**
   * Nothing was due: sleep until the next job is (a poll, a lease that runs out), at most
   * IDLE_MAX_MS, so an idle service does not query the table four times a second. New jobs poke
   * the runner of the instance that created them; the cap is for jobs left by another instance.
   */
  async function idleDelay(): Promise<number> {
    const due = await nextJobDueAt(db).catch(() => null)
    if (!due) return IDLE_MAX_MS
    return Math.max(opts.tickMs, Math.min(IDLE_MAX_MS, due.getTime() - Date.now()))
  }

  /** When jobs of providers this instance lacks were last looked for. */
  let overdueCheckedAt = 0

  /** Answers whether a claim took as many jobs as it had room for (so more may be due). */
  async function claim(): Promise<boolean> {
    let full = false
    try {
      const now = new Date()
      for (const name of providers.keys()) {
        // Stopping: nothing more is claimed (what is already in hand finishes).
        if (stopped) return full
        let free = opts.concurrency - (inFlight.get(name) ?? 0)
        if (free <= 0) continue
        // Polls of jobs already at the provider first; then new jobs, only while the provider has
        // fewer than `concurrency` of ours (two instances may each start one past it at once).
        const polls = await claimDueJobs(db, now, free, opts.leaseMs, { provider: name, started: true })
        for (const job of polls) take(name, job)
        if (polls.length === free) full = true
        free -= polls.length
        if (stopped) return full
        if (free <= 0) continue
        const room = opts.concurrency - (await countStartedJobs(db, name)) - (starting.get(name) ?? 0)
        const limit = Math.min(free, room)
        const fresh = await claimDueJobs(db, now, limit, opts.leaseMs, { provider: name, started: false })
        for (const job of fresh) take(name, job)
        if (limit > 0 && fresh.length === limit) full = true
      }
      // Jobs of a provider this instance lacks (its key was removed) end at their deadline,
      // refunded. Rare, and deadlines are minutes: looked for once per idle interval, not per tick.
      if (stopped || Date.now() - overdueCheckedAt < IDLE_MAX_MS) return full
      overdueCheckedAt = Date.now()
      const overdue = await claimDueJobs(db, now, 10, opts.leaseMs, { overdueOutside: [...providers.keys()] })
      for (const job of overdue) take(job.provider, job)
      if (overdue.length === 10) full = true
    } catch (err) {
      hooks.log.error({ err }, 'generation runner tick failed')
    }
    return full
  }

  function schedule(delay: number) {
    if (stopped) return
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => void tick(), delay)
    timer.unref()
  }

  /** Looks for due jobs now (after a new job is created, or a slot frees up). */
  function poke() {
    if (!stopped) setImmediate(() => void tick())
  }

  return {
    start() {
      stopped = false
      poke()
    },
    poke,
    /** Stops claiming work and waits for the jobs in hand; their leases are released by their own updates. */
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      // A tick under way finishes first (what it claims joins `working`), so nothing reads the
      // database after the service closes it.
      await current
      while (working.size) await Promise.allSettled([...working])
    },
  }
}
