// OpenAI images (https://platform.openai.com/docs/api-reference/images/create). The API is
// synchronous (one request that answers with the image after up to a couple of minutes), so it
// is wrapped: start() returns at once and the request runs in the background of this process;
// poll() reports running until it settles. An in-flight request does not survive a restart, so
// polling an id this process does not know re-issues the request from the job's input.
import { randomUUID } from 'node:crypto'
import {
  ProviderError,
  type GenerationInput,
  type ImageProvider,
  type PollResult,
  type ProviderJob,
  type ProviderOutput,
  type StartResult,
} from '../provider.js'
import { asObject, badResponse, httpError, send, trimBase, type HttpOptions } from './http.js'

export type OpenAIOptions = {
  key: string
  baseUrl: string
  /** The whole generation request; high-quality images take up to about two minutes. */
  timeoutMs?: number
}

const OPENAI_DEFAULT_TIMEOUT_MS = 180_000

const SIZES: Record<string, readonly string[]> = {
  'gpt-image-1': ['1024x1024', '1536x1024', '1024x1536'],
  'gpt-image-1-mini': ['1024x1024', '1536x1024', '1024x1536'],
  'gpt-image-1.5': ['1024x1024', '1536x1024', '1024x1536'],
  'dall-e-3': ['1024x1024', '1792x1024', '1024x1792'],
  'dall-e-2': ['256x256', '512x512', '1024x1024'],
}

/**
 * The supported size closest in aspect ratio to the wanted one (the image is resized for the
 * display later); among equally close ones the smallest that covers the wanted size, else the largest.
 */
export function openaiSize(model: string, width: number, height: number): string {
  const sizes = SIZES[model] ?? SIZES['gpt-image-1']!
  const want = Math.log(width / height)
  const parsed = sizes.map((s) => {
    const [w, h] = s.split('x').map(Number) as [number, number]
    return { s, w, h, d: Math.abs(Math.log(w / h) - want) }
  })
  const best = Math.min(...parsed.map((p) => p.d))
  const closest = parsed.filter((p) => p.d - best < 1e-9).sort((a, b) => a.w * a.h - b.w * b.h)
  return (closest.find((p) => p.w >= width && p.h >= height) ?? closest.at(-1)!).s
}

type Flight = {
  controller: AbortController
  outcome?: { result: PollResult } | { error: ProviderError }
  canceled?: boolean
}

export function createOpenAIProvider(options: OpenAIOptions): ImageProvider {
  const base = trimBase(options.baseUrl)
  const http: HttpOptions = { provider: 'openai', secret: options.key, timeoutMs: options.timeoutMs ?? OPENAI_DEFAULT_TIMEOUT_MS }
  const flights = new Map<string, Flight>()

  function refine(err: ProviderError, body: unknown): ProviderError {
    const e = asObject(asObject(body)?.error)
    const code = typeof e?.code === 'string' ? e.code : typeof e?.type === 'string' ? e.type : ''
    if (code === 'moderation_blocked' || code === 'content_policy_violation')
      return new ProviderError(err.message, 'MODERATED', false, undefined, err.httpStatus)
    // A 429 that retrying cannot fix.
    if (code === 'insufficient_quota' || code === 'billing_hard_limit_reached')
      return new ProviderError(err.message, 'PROVIDER_BILLING', false, undefined, err.httpStatus)
    return err
  }

  async function generate(input: GenerationInput, signal: AbortSignal): Promise<PollResult> {
    // No negative prompt in this API: it is stated in the prompt instead.
    const prompt = input.negativePrompt ? `${input.prompt}\n\nAvoid: ${input.negativePrompt}` : input.prompt
    const body = { model: input.model, prompt, size: openaiSize(input.model, input.width, input.height), n: 1 }
    const res = await send(http, {
      method: 'POST',
      url: `${base}/v1/images/generations`,
      headers: { authorization: `Bearer ${options.key}` },
      body,
      signal,
    })
    if (res.status < 200 || res.status > 299) throw refine(httpError(http, res), res.body)
    const r = asObject(res.body)
    const item = Array.isArray(r?.data) ? asObject(r.data[0]) : undefined
    let output: ProviderOutput | undefined
    if (typeof item?.b64_json === 'string' && item.b64_json) {
      const format = typeof r?.output_format === 'string' ? r.output_format : 'png'
      output = { data: Buffer.from(item.b64_json, 'base64'), contentType: `image/${format === 'jpg' ? 'jpeg' : format}` }
    } else if (typeof item?.url === 'string' && /^https?:\/\//.test(item.url)) {
      output = { url: item.url }
    }
    if (!output) throw badResponse(http, 'no image in data[0]')
    return { status: 'succeeded', outputs: [output] }
  }

  function launch(id: string, input: GenerationInput): Flight {
    const flight: Flight = { controller: new AbortController() }
    flights.set(id, flight)
    generate(input, flight.controller.signal).then(
      (result) => {
        flight.outcome = { result }
      },
      (err: unknown) => {
        flight.outcome = {
          error: err instanceof ProviderError ? err : new ProviderError(`openai: ${(err as Error).message}`, 'PROVIDER_UNAVAILABLE', true),
        }
      },
    )
    return flight
  }

  return {
    name: 'openai',

    async start(input: GenerationInput): Promise<StartResult> {
      const id = `openai-${randomUUID()}`
      launch(id, input)
      return { providerJobId: id, state: { startedAt: Date.now() } }
    },

    async poll(job: ProviderJob): Promise<PollResult> {
      const flight = flights.get(job.providerJobId)
      if (!flight) {
        // Started by an earlier process (or its request failed and is being retried): ask again.
        launch(job.providerJobId, job.input)
        return { status: 'running' }
      }
      if (flight.canceled) {
        flights.delete(job.providerJobId)
        return { status: 'canceled' }
      }
      if (!flight.outcome) return { status: 'running' }
      flights.delete(job.providerJobId)
      if ('result' in flight.outcome) return flight.outcome.result
      const err = flight.outcome.error
      // Retryable: the runner backs off (honouring Retry-After) and the next poll re-issues.
      if (err.retryable) throw err
      return { status: 'failed', error: { code: err.code, message: err.message } }
    },

    async cancel(job: ProviderJob): Promise<void> {
      const flight = flights.get(job.providerJobId) ?? { controller: new AbortController() }
      flight.canceled = true
      flight.controller.abort()
      flights.set(job.providerJobId, flight)
    },

    async close(): Promise<void> {
      for (const flight of flights.values()) flight.controller.abort()
      flights.clear()
    },
  }
}
