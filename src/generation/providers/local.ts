// The default provider: draws a simple picture of what the prompt names (local-image/), the same
// picture for the same prompt, size and seed, and walks it through queued → running → done over
// `durationMs` so polling is exercised like a remote provider. No network, no key.
// Failure injection (documented, for tests and demos): a prompt starting with "!fail" fails.
import { createHash } from 'node:crypto'
import { renderLocalImage } from '../local-image/render.js'
import type { GenerationInput, ImageProvider, PollResult, ProviderJob, StartResult } from '../provider.js'

export function seedFor(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0)
}

export function createLocalProvider(opts: { durationMs: number }): ImageProvider {
  return {
    name: 'local',
    async start(input: GenerationInput): Promise<StartResult> {
      return {
        providerJobId: `local-${input.seed.toString(16)}-${Date.now().toString(36)}`,
        state: { startedAt: Date.now() },
        // Its first change of state is due then: queued until a third of the duration.
        pollAfterMs: Math.ceil(opts.durationMs / 3),
      }
    },
    async poll(job: ProviderJob): Promise<PollResult> {
      if (job.input.prompt.trimStart().startsWith('!fail'))
        return { status: 'failed', error: { code: 'LOCAL_INJECTED_FAILURE', message: 'failure injected by the prompt' } }
      const startedAt = Number(job.state.startedAt ?? 0)
      const elapsed = Date.now() - startedAt
      const queueMs = opts.durationMs / 3
      if (elapsed < queueMs) return { status: 'queued' }
      if (elapsed < opts.durationMs)
        return { status: 'running', progress: Math.round(((elapsed - queueMs) / (opts.durationMs - queueMs)) * 100) }
      return { status: 'succeeded', outputs: [{ data: await renderLocalImage(job.input), contentType: 'image/png' }] }
    },
    async cancel() {},
  }
}
