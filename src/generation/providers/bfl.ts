// Black Forest Labs API (https://docs.bfl.ai): submit to /v1/{model}, poll the returned
// polling_url. BFL has no cancel endpoint. The result's signed URL expires after about ten
// minutes, so the caller must copy it at once.
import type { GenerationInput, ImageProvider, PollResult, ProviderJob, StartResult } from '../provider.js'
import { DEFAULT_TIMEOUT_MS, asObject, badResponse, scrub, sendOk, trimBase, isTrustedUrl, type HttpOptions } from './http.js'

export type BflOptions = { key: string; baseUrl: string; timeoutMs?: number }

/** FLUX takes multiples of 32 between 256 and 1440 pixels per side; the image is resized later anyway. */
export function bflDimension(px: number): number {
  return Math.min(1440, Math.max(256, Math.round(px / 32) * 32))
}

export function createBflProvider(options: BflOptions): ImageProvider {
  const base = trimBase(options.baseUrl)
  const http: HttpOptions = { provider: 'bfl', secret: options.key, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS }
  const headers = { 'x-key': options.key }

  /** BFL answers from regional hosts (api.us1.bfl.ai), so siblings of the base host are trusted. */
  function pollingUrl(job: ProviderJob): string {
    const stored = job.state.pollingUrl
    if (isTrustedUrl(stored, base, true)) return stored
    return `${base}/v1/get_result?id=${encodeURIComponent(job.providerJobId)}`
  }

  return {
    name: 'bfl',

    async start(input: GenerationInput, signal): Promise<StartResult> {
      const body = { prompt: input.prompt, width: bflDimension(input.width), height: bflDimension(input.height), seed: input.seed }
      const model = input.model.split('/').map(encodeURIComponent).join('/')
      const res = await sendOk(http, { method: 'POST', url: `${base}/v1/${model}`, headers, body, signal })
      const r = asObject(res.body)
      if (typeof r?.id !== 'string' || !r.id) throw badResponse(http, 'submission without an id')
      return { providerJobId: r.id, state: typeof r.polling_url === 'string' ? { pollingUrl: r.polling_url } : {} }
    },

    async poll(job: ProviderJob, signal): Promise<PollResult> {
      const res = await sendOk(http, { url: pollingUrl(job), headers, signal })
      const r = asObject(res.body)
      const details = r?.details ? ` (${scrub(JSON.stringify(r.details), options.key)})` : ''
      switch (r?.status) {
        case 'Pending': {
          const p = typeof r.progress === 'number' && Number.isFinite(r.progress) ? r.progress : undefined
          return p === undefined ? { status: 'running' } : { status: 'running', progress: Math.round(Math.min(1, Math.max(0, p)) * 100) }
        }
        case 'Ready': {
          const sample = asObject(r.result)?.sample
          if (typeof sample !== 'string' || !/^https?:\/\//.test(sample))
            return { status: 'failed', error: { code: 'PROVIDER_NO_OUTPUT', message: 'bfl: the task is ready without an image' } }
          return { status: 'succeeded', outputs: [{ url: sample }] }
        }
        case 'Request Moderated':
        case 'Content Moderated':
          return { status: 'failed', error: { code: 'MODERATED', message: `bfl: ${r.status}${details}` } }
        case 'Error':
          return { status: 'failed', error: { code: 'PROVIDER_FAILED', message: `bfl: generation error${details}` } }
        case 'Task not found':
          // Tasks expire on BFL's side; asking again will not bring it back.
          return { status: 'failed', error: { code: 'PROVIDER_NOT_FOUND', message: 'bfl: task not found' } }
        default:
          throw badResponse(http, `task status ${JSON.stringify(r?.status)}`)
      }
    },

    async cancel(): Promise<void> {
      // No cancel endpoint: the task runs to the end on BFL's side and its result is ignored.
    },
  }
}
