// Generation jobs: created (and paid for) atomically, run by the runner, finished once —
// succeeded with stored, converted and delivered images, or failed/canceled with a refund.
import { createHash, randomUUID } from 'node:crypto'
import type { Config } from '../config.js'
import type { Database } from '../db/client.js'
import { balanceOf, credit, debit } from '../credits/repository.js'
import { accessibleDevice } from '../devices/access.js'
import { findDevice } from '../devices/repository.js'
import type { DeviceLink } from '../devices/sessions.js'
import { appError } from '../errors.js'
import { deliverImage } from '../images/delivery.js'
import { storeImage, type StoredImage } from '../images/pipeline.js'
import type { ConversionPool } from '../images/conversion-pool.js'
import { findVariants, findImage } from '../images/repository.js'
import type { DisplayProfile } from '../images/profiles.js'
import { findPrompt, insertPrompt } from '../prompts/repository.js'
import type { PromptService } from '../prompts/service.js'
import type { GenerateRequest } from './records.js'
import type { ObjectStore } from '../storage/store.js'
import { findModel } from './models.js'
import { ProviderError, type GenerationInput, type ImageProvider, type ProviderOutput } from './provider.js'
import { seedFor } from './providers/local.js'
import { findJob, insertJob, releaseLeases, updateJob, type JobRow } from './repository.js'
import { createRunner } from './runner.js'
import { defaultModelId } from './setup.js'

type Notify = (userId: string, kind: 'generation', message: { title: string; body: string; url?: string }) => Promise<unknown>

export type GenerationDeps = {
  db: Database
  config: Config
  storage: ObjectStore
  images: ConversionPool
  link: DeviceLink
  prompts: PromptService
  providers: Map<string, ImageProvider>
  log: { warn: (o: object | string, m?: string) => void; error: (o: object | string, m?: string) => void }
  notify?: () => Notify | undefined
  /** Balances changed: cached sessions (which carry the user row) must be dropped. */
  balanceChanged?: () => Promise<void>
}

// The request type comes from its schema, so it is what POST /api/generate validates.
export type { GenerateRequest } from './records.js'

const MAX_OUTPUT_BYTES = 30 * 1024 * 1024

/** Downloads a provider's output at once: providers delete them within the hour. */
async function fetchOutput(output: ProviderOutput): Promise<Buffer> {
  if ('data' in output) return output.data
  const url = new URL(output.url)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ProviderError('output URL is not http(s)', 'BAD_OUTPUT', false)
  let res: Response
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(60_000) })
  } catch (err) {
    throw new ProviderError(`downloading the output failed: ${(err as Error).message}`, 'OUTPUT_DOWNLOAD_FAILED', true)
  }
  if (!res.ok)
    throw new ProviderError(
      `downloading the output failed with ${res.status}`,
      'OUTPUT_DOWNLOAD_FAILED',
      res.status >= 500 || res.status === 429,
    )
  const declared = Number(res.headers.get('content-length') ?? 0)
  if (declared > MAX_OUTPUT_BYTES) throw new ProviderError('output too large', 'OUTPUT_TOO_LARGE', false)
  const body = Buffer.from(await res.arrayBuffer())
  if (body.length > MAX_OUTPUT_BYTES) throw new ProviderError('output too large', 'OUTPUT_TOO_LARGE', false)
  return body
}

/** The id a job's image is stored under: derived from the job, so storing it again finds it. */
export function imageIdForJob(jobId: string): string {
  const h = createHash('sha256').update(`generation-image:${jobId}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`
}

export function createGenerationService(deps: GenerationDeps) {
  const { db, config, storage, link, providers, log } = deps
  const g = config.generation

  /**
   * Everything that can refuse the request is checked before anything is stored or published:
   * the device (for a stored prompt too: access may have changed since), the model, its
   * provider and, for a paid model, the balance (taken atomically with the job below).
   */
  async function create(userId: string, req: GenerateRequest): Promise<JobRow> {
    if (!req.promptId && !req.prompt) throw appError('VALIDATION_ERROR', 'body must have promptId or prompt')
    const stored = req.promptId ? await findPrompt(db, req.promptId) : undefined
    if (req.promptId && (!stored || stored.userId !== userId)) throw appError('PROMPT_NOT_FOUND')
    const deviceId = req.deviceId ?? req.prompt?.deviceId ?? stored?.deviceId ?? undefined
    const dev = deviceId ? await accessibleDevice(db, deviceId, userId, 'manage') : undefined
    const modelId = req.model ?? stored?.model ?? req.prompt?.model ?? dev?.selectedModel ?? defaultModelId(config)
    const model = findModel(modelId)
    if (!model) throw appError('UNKNOWN_MODEL', `Unknown model ${modelId}`)
    if (!providers.has(model.provider))
      throw appError('PROVIDER_NOT_CONFIGURED', `Model ${model.id} needs the ${model.provider} provider, which has no key configured`)
    const insufficient = () => appError('INSUFFICIENT_BALANCE', `This model costs ${model.price} credits; your balance is too low`)
    if (Number(model.price) > 0 && Number((await balanceOf(db, userId)) ?? 0) < Number(model.price)) throw insufficient()
    // A new prompt is stored with its job, in one transaction: a refused generation leaves none.
    const draft = stored ? undefined : await deps.prompts.prepare(userId, { ...req.prompt!, deviceId: dev?.id, model: model.id })
    const prompt = stored ?? draft!
    const input: GenerationInput = {
      prompt: prompt.text,
      negativePrompt: prompt.negativeText ?? undefined,
      width: prompt.width,
      height: prompt.height,
      model: model.providerModel,
      seed: seedFor(`${prompt.text}\n${prompt.negativeText ?? ''}`),
    }
    const now = new Date()
    const { job, message } = await db.transaction(async (tx) => {
      const created = draft ? await insertPrompt(tx, draft) : undefined
      const message = created ? await deps.prompts.stage(tx, created) : undefined
      const row = await insertJob(tx, {
        id: randomUUID(),
        userId,
        deviceId: dev?.id ?? null,
        promptId: prompt.id,
        provider: model.provider,
        model: model.id,
        input: input as unknown as Record<string, unknown>,
        price: model.price,
        deadlineAt: new Date(now.getTime() + g.timeoutSeconds * 1000),
        nextPollAt: now,
      })
      // Taken atomically with the job: two jobs racing for the last credit cannot both pass.
      if (Number(model.price) > 0 && (await debit(tx, userId, model.price, row.id)) === null) throw insufficient()
      return { job: row, message }
    })
    await message?.send()
    if (Number(model.price) > 0) await deps.balanceChanged?.()
    runner.poke()
    return job
  }

  async function succeed(job: JobRow, outputs: ProviderOutput[]): Promise<string> {
    const first = outputs[0]
    if (!first) throw new ProviderError('the provider returned no image', 'NO_OUTPUT', false)
    const original = await fetchOutput(first)
    const dev = job.deviceId ? await findDevice(db, job.deviceId) : undefined
    const profile = dev ? (dev.display as DisplayProfile) : null
    // One image per job, whatever happens to the runner: a runner that died after storing it left
    // it under the same id, and one that died while storing is overwritten, not duplicated.
    const imageId = imageIdForJob(job.id)
    const kept = await findImage(db, imageId)
    let stored: StoredImage
    try {
      stored = kept
        ? { image: kept, variants: await findVariants(db, imageId) }
        : await storeImage(
            { db, storage, images: deps.images },
            { userId: job.userId, deviceId: dev?.id, jobId: job.id, source: 'generation', original, profile, imageId },
          )
    } catch (err) {
      throw new ProviderError(`the output is not a usable image: ${(err as Error).message}`, 'BAD_OUTPUT', false)
    }
    const done = await updateJob(db, job.id, ['queued', 'running'], {
      status: 'succeeded',
      progress: 100,
      imageId: stored.image.id,
      finishedAt: new Date(),
      leaseUntil: null,
      errorCode: null,
      errorMessage: null,
    })
    // Canceled while we were downloading: keep the image, deliver nothing.
    if (!done) return stored.image.id
    if (dev && profile)
      await deliverImage({ db, link, storage, baseUrl: config.baseUrl }, dev.id, profile, stored, { userId: job.userId, jobId: job.id })
    await deps
      .notify?.()?.(job.userId, 'generation', {
        title: 'Your image is ready',
        body: String((job.input as { prompt?: string }).prompt ?? '').slice(0, 120),
        url: resultPage(config.baseUrl, job),
      })
      .catch((err) => log.warn({ err, jobId: job.id }, 'notification failed'))
    return stored.image.id
  }

  async function fail(job: JobRow, status: 'failed' | 'canceled', error?: { code: string; message: string }): Promise<void> {
    const ended = await db.transaction(async (tx) => {
      const row = await updateJob(tx, job.id, ['queued', 'running'], {
        status,
        finishedAt: new Date(),
        leaseUntil: null,
        errorCode: error?.code ?? null,
        errorMessage: error?.message ?? null,
      })
      if (row && Number(row.price) > 0) await credit(tx, row.userId, row.price, { reason: 'refund', jobId: row.id })
      return row
    })
    if (ended && Number(ended.price) > 0) await deps.balanceChanged?.()
    if (ended && status === 'failed') {
      await deps
        .notify?.()?.(job.userId, 'generation', {
          title: 'Image generation failed',
          body: error?.message ?? 'failed',
          url: resultPage(config.baseUrl, job),
        })
        .catch((err) => log.warn({ err, jobId: job.id }, 'notification failed'))
    }
  }

  async function get(userId: string, jobId: string) {
    const job = await findJob(db, jobId)
    if (!job || job.userId !== userId) throw appError('JOB_NOT_FOUND')
    const image = job.imageId ? await findImage(db, job.imageId) : undefined
    const variants = image ? await findVariants(db, image.id) : []
    return { job, image, variants }
  }

  async function cancel(userId: string, jobId: string) {
    const job = await findJob(db, jobId)
    if (!job || job.userId !== userId) throw appError('JOB_NOT_FOUND')
    if (job.status !== 'queued' && job.status !== 'running') throw appError('JOB_FINISHED', `The job is already ${job.status}`)
    const provider = providers.get(job.provider)
    if (provider && job.providerJobId) {
      await provider
        .cancel({ providerJobId: job.providerJobId, state: job.providerState, input: job.input as unknown as GenerationInput })
        .catch((err) => log.warn({ err, jobId }, 'provider cancel failed'))
    }
    await fail(job, 'canceled', { code: 'CANCELED', message: 'canceled by the user' })
    return get(userId, jobId)
  }

  const runner = createRunner(
    db,
    providers,
    { tickMs: g.tickMs, leaseMs: 60_000, baseBackoffMs: g.pollBaseMs, maxBackoffMs: g.pollMaxMs, concurrency: g.concurrency },
    { succeed, fail, log },
  )

  /** Stops the runner (jobs in hand finish their step) and the providers' background work. */
  async function close() {
    await runner.stop()
    await Promise.allSettled([...providers.values()].map((p) => p.close?.()))
  }

  /**
   * Starts the runner. Without a cluster (no Redis) this process is the only runner, so a lease
   * still held is one its previous run left (a crash, a kill -9): those jobs are taken up at once
   * instead of when the lease runs out.
   */
  async function start() {
    if (!config.redisUrl) {
      const released = await releaseLeases(db)
      if (released) log.warn({ jobs: released }, 'took up generation jobs the previous run left unfinished')
    }
    runner.start()
  }

  return { create, get, cancel, runner, start, close }
}

export type GenerationService = ReturnType<typeof createGenerationService>

/** Where a generation's notification leads: the console's page of its device (or the device list). */
function resultPage(baseUrl: string, job: { deviceId: string | null }): string {
  return job.deviceId ? `${baseUrl}/devices/${job.deviceId}` : `${baseUrl}/`
}
