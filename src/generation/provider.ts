// One interface for every image-generation provider: start a job, poll it, cancel it.
// Each provider maps its own statuses and errors to these.

export type GenerationInput = {
  prompt: string
  negativePrompt?: string
  width: number
  height: number
  /** The provider's own model id (e.g. "black-forest-labs/flux-schnell"). */
  model: string
  /** Deterministic seed derived from the prompt, for providers that take one. */
  seed: number
}

/** What a provider keeps between calls; stored on the job row so polling survives restarts. */
type ProviderState = Record<string, unknown>

export type StartResult = {
  providerJobId: string
  state?: ProviderState
  /**
   * When the provider knows its first poll is worth making (the local provider: when its drawing
   * is due). 0: poll in the same step, without waiting for the runner's next tick. Without it the
   * runner backs off as for any remote job.
   */
  pollAfterMs?: number
}

export type ProviderOutput = { url: string } | { data: Buffer; contentType: string }

export type PollResult =
  | { status: 'queued' | 'running'; progress?: number; state?: ProviderState }
  | { status: 'succeeded'; outputs: ProviderOutput[]; state?: ProviderState }
  | { status: 'failed'; error: { code: string; message: string } }
  | { status: 'canceled' }

export type ProviderJob = { providerJobId: string; state: ProviderState; input: GenerationInput }

export interface ImageProvider {
  readonly name: string
  start(input: GenerationInput, signal?: AbortSignal): Promise<StartResult>
  poll(job: ProviderJob, signal?: AbortSignal): Promise<PollResult>
  /** Best effort: some providers cannot cancel; the job is canceled on our side regardless. */
  cancel(job: ProviderJob, signal?: AbortSignal): Promise<void>
  /** Optional: stops work the provider runs in the background (OpenAI's wrapped request) on shutdown. */
  close?(): Promise<void>
}

/**
 * A provider call that failed. `retryable` errors (429, 5xx, network) are retried with backoff
 * until the job's deadline, honouring `retryAfterMs` (from Retry-After); others fail the job.
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
    readonly httpStatus?: number,
  ) {
    super(message)
    this.name = 'ProviderError'
  }
}

/** Parses Retry-After (seconds or an HTTP date) into milliseconds. */
export function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined
  const secs = Number(header)
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000
  const at = Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}
