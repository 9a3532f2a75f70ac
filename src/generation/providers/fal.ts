// fal queue API (https://docs.fal.ai/model-endpoints/queue): submit to the queue, poll the
// status URL, fetch the result from the response URL once COMPLETED, cancel with PUT.
// The URLs fal returns are kept in the job state; only those on the configured base origin are
// followed (they carry our key). Others are replaced by the documented URL on the base.
import type { GenerationInput, ImageProvider, PollResult, ProviderJob, ProviderOutput, StartResult } from '../provider.js'
import {
  DEFAULT_TIMEOUT_MS,
  asObject,
  badResponse,
  errorText,
  httpError,
  isTrustedUrl,
  scrub,
  send,
  sendOk,
  trimBase,
  type HttpOptions,
} from './http.js'

export type FalOptions = { key: string; baseUrl: string; timeoutMs?: number }

type FalUrls = { statusUrl: string; responseUrl: string; cancelUrl: string }

export function createFalProvider(options: FalOptions): ImageProvider {
  const base = trimBase(options.baseUrl)
  const http: HttpOptions = { provider: 'fal', secret: options.key, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS }
  const headers = { authorization: `Key ${options.key}` }

  /** The request URLs live under the app id (the first two path segments of the model id). */
  function documentedUrls(model: string, requestId: string): FalUrls {
    const app = model.split('/').slice(0, 2).map(encodeURIComponent).join('/')
    const root = `${base}/${app}/requests/${encodeURIComponent(requestId)}`
    return { statusUrl: `${root}/status`, responseUrl: root, cancelUrl: `${root}/cancel` }
  }

  /** Stored URLs if they are on our base origin; the documented ones otherwise. */
  function urlsFor(job: ProviderJob): FalUrls {
    const fallback = documentedUrls(job.input.model, job.providerJobId)
    const s = job.state
    return {
      statusUrl: isTrustedUrl(s.statusUrl, base) ? s.statusUrl : fallback.statusUrl,
      responseUrl: isTrustedUrl(s.responseUrl, base) ? s.responseUrl : fallback.responseUrl,
      cancelUrl: isTrustedUrl(s.cancelUrl, base) ? s.cancelUrl : fallback.cancelUrl,
    }
  }

  function failed(message: string): PollResult {
    const text = scrub(message, options.key)
    const code = /nsfw|safety|moderat|content policy/i.test(text) ? 'MODERATED' : 'PROVIDER_FAILED'
    return { status: 'failed', error: { code, message: `fal: ${text}` } }
  }

  async function result(url: string, signal?: AbortSignal): Promise<PollResult> {
    const res = await send(http, { url, headers, signal })
    const body = asObject(res.body)
    if (res.status < 200 || res.status > 299) {
      // A finished request whose model raised answers with the model's status and {detail};
      // auth, rate limits and gateway errors without a detail are ours to retry or report.
      const detail = errorText(res.body)
      const transport = [401, 403, 408, 429].includes(res.status) || (res.status >= 500 && !(body && 'detail' in body))
      if (transport || !detail) throw httpError(http, res)
      return failed(detail)
    }
    if (body && 'detail' in body && !Array.isArray(body.images)) return failed(errorText(body) ?? 'the request failed')
    const images = Array.isArray(body?.images) ? body.images : []
    const outputs: ProviderOutput[] = []
    for (const img of images) {
      const u = asObject(img)?.url
      if (typeof u === 'string' && /^https?:\/\//.test(u)) outputs.push({ url: u })
      else if (typeof u === 'string' && u.startsWith('data:')) {
        const m = /^data:([\w/+.-]+)?;base64,(.*)$/s.exec(u)
        if (m) outputs.push({ data: Buffer.from(m[2] ?? '', 'base64'), contentType: m[1] ?? 'image/png' })
      }
    }
    if (outputs.length === 0)
      return { status: 'failed', error: { code: 'PROVIDER_NO_OUTPUT', message: 'fal: the request completed without an image' } }
    return { status: 'succeeded', outputs }
  }

  return {
    name: 'fal',

    async start(input: GenerationInput, signal): Promise<StartResult> {
      const body: Record<string, unknown> = {
        prompt: input.prompt,
        image_size: { width: input.width, height: input.height },
        seed: input.seed,
      }
      if (input.negativePrompt) body.negative_prompt = input.negativePrompt
      const model = input.model.split('/').map(encodeURIComponent).join('/')
      const res = await sendOk(http, { method: 'POST', url: `${base}/${model}`, headers, body, signal })
      const r = asObject(res.body)
      if (typeof r?.request_id !== 'string' || !r.request_id) throw badResponse(http, 'queue submission without a request_id')
      return {
        providerJobId: r.request_id,
        state: { statusUrl: r.status_url, responseUrl: r.response_url, cancelUrl: r.cancel_url },
      }
    },

    async poll(job: ProviderJob, signal): Promise<PollResult> {
      const urls = urlsFor(job)
      const res = await sendOk(http, { url: urls.statusUrl, headers, signal })
      const s = asObject(res.body)
      switch (s?.status) {
        case 'IN_QUEUE':
          return { status: 'queued' }
        case 'IN_PROGRESS':
          return { status: 'running' }
        case 'COMPLETED': {
          // fal reports a request whose model raised as COMPLETED with an `error` field.
          if (typeof s.error === 'string' && s.error) return failed(s.error)
          const responseUrl = isTrustedUrl(s.response_url, base) ? s.response_url : urls.responseUrl
          return result(responseUrl, signal)
        }
        // Not in fal's documented lifecycle, but seen in its schemas: terminal states by name.
        case 'FAILED':
          return failed(typeof s.error === 'string' && s.error ? s.error : 'the request failed')
        case 'CANCELED':
        case 'CANCELLED':
          return { status: 'canceled' }
        default:
          throw badResponse(http, `queue status ${JSON.stringify(s?.status)}`)
      }
    },

    async cancel(job: ProviderJob, signal): Promise<void> {
      const res = await send(http, { method: 'PUT', url: urlsFor(job).cancelUrl, headers, signal })
      // 400 ALREADY_COMPLETED: nothing left to cancel, which is what the caller wanted.
      if (res.status === 400 && asObject(res.body)?.status === 'ALREADY_COMPLETED') return
      if (res.status < 200 || res.status > 299) throw httpError(http, res)
    },
  }
}
