// Replicate predictions API (https://replicate.com/docs/reference/http): create a prediction,
// poll it by id, cancel it. Outputs are replicate.delivery URLs that expire after about an hour.
import type { GenerationInput, ImageProvider, PollResult, ProviderJob, ProviderOutput, StartResult } from '../provider.js'
import { DEFAULT_TIMEOUT_MS, asObject, badResponse, scrub, sendOk, trimBase, type HttpOptions } from './http.js'

export type ReplicateOptions = { token: string; baseUrl: string; timeoutMs?: number }

type Prediction = { id?: unknown; status?: unknown; output?: unknown; error?: unknown; logs?: unknown }

/** The last tqdm percentage in the logs ("… 50%|█████     | 2/4 …"), if the model prints one. */
export function progressFromLogs(logs: unknown): number | undefined {
  if (typeof logs !== 'string') return undefined
  const matches = [...logs.matchAll(/(\d{1,3})%\|/g)]
  const last = matches.at(-1)?.[1]
  if (last === undefined) return undefined
  const pct = Number(last)
  return pct >= 0 && pct <= 100 ? pct : undefined
}

function dataUriOutput(uri: string): ProviderOutput | undefined {
  const m = /^data:([\w/+.-]+)?(;base64)?,(.*)$/s.exec(uri)
  if (!m?.[2]) return undefined
  return { data: Buffer.from(m[3] ?? '', 'base64'), contentType: m[1] ?? 'application/octet-stream' }
}

/** `output` is one URL or a list of them, depending on the model. */
function outputs(output: unknown): ProviderOutput[] {
  const list = Array.isArray(output) ? output : [output]
  const out: ProviderOutput[] = []
  for (const item of list) {
    if (typeof item !== 'string') continue
    if (item.startsWith('data:')) {
      const d = dataUriOutput(item)
      if (d) out.push(d)
    } else if (/^https?:\/\//.test(item)) out.push({ url: item })
  }
  return out
}

/** The aspect ratios FLUX models on Replicate accept. */
const ASPECT_RATIOS = ['1:1', '16:9', '21:9', '3:2', '2:3', '4:5', '5:4', '3:4', '4:3', '9:16', '9:21'] as const

/** The accepted aspect ratio closest to width:height (the image is then cropped or fitted to the display). */
export function replicateAspectRatio(width: number, height: number): (typeof ASPECT_RATIOS)[number] {
  const want = Math.log(width / height)
  let best: (typeof ASPECT_RATIOS)[number] = '1:1'
  let distance = Infinity
  for (const r of ASPECT_RATIOS) {
    const [w, h] = r.split(':').map(Number) as [number, number]
    const d = Math.abs(Math.log(w / h) - want)
    if (d < distance) {
      best = r
      distance = d
    }
  }
  return best
}

export function createReplicateProvider(options: ReplicateOptions): ImageProvider {
  const base = trimBase(options.baseUrl)
  const http: HttpOptions = { provider: 'replicate', secret: options.token, timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS }
  const headers = { authorization: `Bearer ${options.token}` }
  const predictionUrl = (id: string) => `${base}/v1/predictions/${encodeURIComponent(id)}`

  function buildInput(input: GenerationInput): Record<string, unknown> {
    // FLUX models take an aspect ratio, SD-style models width and height; predictions ignore
    // inputs a model does not declare, so both go along.
    const body: Record<string, unknown> = {
      prompt: input.prompt,
      aspect_ratio: replicateAspectRatio(input.width, input.height),
      width: input.width,
      height: input.height,
      seed: input.seed,
      output_format: 'png',
    }
    if (input.negativePrompt) body.negative_prompt = input.negativePrompt
    return body
  }

  return {
    name: 'replicate',

    async start(input, signal): Promise<StartResult> {
      // "owner/name:version" pins a version and goes through /v1/predictions; otherwise the
      // model's latest version through the model's own endpoint.
      const colon = input.model.indexOf(':')
      const res =
        colon >= 0
          ? await sendOk(http, {
              method: 'POST',
              url: `${base}/v1/predictions`,
              headers,
              body: { version: input.model.slice(colon + 1), input: buildInput(input) },
              signal,
            })
          : await sendOk(http, {
              method: 'POST',
              url: `${base}/v1/models/${input.model.split('/').map(encodeURIComponent).join('/')}/predictions`,
              headers,
              body: { input: buildInput(input) },
              signal,
            })
      const p = asObject(res.body) as Prediction | undefined
      if (typeof p?.id !== 'string' || !p.id) throw badResponse(http, 'prediction without an id')
      return { providerJobId: p.id }
    },

    async poll(job: ProviderJob, signal): Promise<PollResult> {
      const res = await sendOk(http, { url: predictionUrl(job.providerJobId), headers, signal })
      const p = asObject(res.body) as Prediction | undefined
      switch (p?.status) {
        case 'starting':
          return { status: 'queued' }
        case 'processing': {
          const progress = progressFromLogs(p.logs)
          return progress === undefined ? { status: 'running' } : { status: 'running', progress }
        }
        case 'succeeded': {
          const out = outputs(p.output)
          if (out.length === 0)
            return {
              status: 'failed',
              error: { code: 'PROVIDER_NO_OUTPUT', message: 'replicate: the prediction succeeded without an image' },
            }
          return { status: 'succeeded', outputs: out }
        }
        case 'failed': {
          const message = scrub(typeof p.error === 'string' && p.error ? p.error : 'the prediction failed', options.token)
          const code = /nsfw|safety|moderat/i.test(message) ? 'MODERATED' : 'PROVIDER_FAILED'
          return { status: 'failed', error: { code, message: `replicate: ${message}` } }
        }
        case 'canceled':
          return { status: 'canceled' }
        case 'aborted':
          // Terminated before it ran (e.g. Replicate's own deadline): not something the user asked for.
          return { status: 'failed', error: { code: 'PROVIDER_ABORTED', message: 'replicate: the prediction was aborted before it ran' } }
        default:
          throw badResponse(http, `prediction status ${JSON.stringify(p?.status)}`)
      }
    },

    async cancel(job: ProviderJob, signal): Promise<void> {
      await sendOk(http, { method: 'POST', url: `${predictionUrl(job.providerJobId)}/cancel`, headers, signal })
    },
  }
}
