// Image generation: the providers, how jobs are paced, and the workers converting images for displays.
import { availableParallelism } from 'node:os'
import { z } from 'zod'
import { invalid } from './error.js'
import { type Section, type Values, blankAsUnset, integer, optionalString, variable } from './variables.js'

/** An image provider's API base: http(s), blank means the default, kept without a trailing slash. */
const providerBaseUrl = (fallback: string) =>
  z.preprocess(
    blankAsUnset,
    z
      .string()
      .trim()
      .url()
      .refine((v) => /^https?:\/\//i.test(v), 'must be an http(s) URL')
      .default(fallback)
      .transform((v) => v.replace(/\/+$/, '')),
  )

/** A remote provider: its key (which enables it) and its API base URL. */
const provider = (name: string, [keyVariable, urlVariable]: [string, string], baseUrl: string, meaning: string) => ({
  key: variable(keyVariable, optionalString, `${name}: the API key; the provider is enabled when it is set`),
  baseUrl: variable(urlVariable, providerBaseUrl(baseUrl), `${name}: the API base URL; ${meaning}`),
})

export const generation = {
  title: 'Generation and image providers',
  intro: 'See [generation.md](generation.md).',
  variables: {
    imageProvider: variable(
      'IMAGE_PROVIDER',
      z.enum(['local', 'replicate', 'fal', 'bfl', 'openai']).default('local'),
      "the default model's provider (a remote one needs its key)",
    ),
    generation: {
      timeoutSeconds: variable(
        'GENERATION_TIMEOUT',
        integer(5, 86400, 600),
        'seconds a generation job may take before it fails (and is refunded)',
      ),
      concurrency: variable(
        'GENERATION_CONCURRENCY',
        integer(1, 100, 4),
        'jobs per provider started at the provider and not finished, across all instances (also the jobs one instance works on at once)',
      ),
      pollBaseMs: variable(
        'GENERATION_POLL_BASE_MS',
        integer(10, undefined, 500),
        "first delay before polling a provider for a job's result (doubling per poll)",
      ),
      pollMaxMs: variable('GENERATION_POLL_MAX_MS', integer(10, undefined, 10_000), 'longest delay between two polls for one job'),
      tickMs: variable('GENERATION_TICK_MS', integer(10, undefined, 250), 'how often due jobs are looked for'),
      localDurationMs: variable(
        'LOCAL_PROVIDER_DURATION_MS',
        integer(0, 600_000, 1500),
        'how long the local provider takes (queued for a third, then running)',
      ),
    },
    imageWorkers: variable(
      'IMAGE_WORKERS',
      // Its default depends on the machine (applied in generationSettings), so the documentation stays the same everywhere.
      z.coerce.number().int().min(1).max(64).optional(),
      "worker threads converting images for displays; each account's conversions wait in their own queue and accounts take turns",
      { default: 'cores − 1 (at least 1)' },
    ),
    providers: {
      replicate: provider('Replicate', ['REPLICATE_API_TOKEN', 'REPLICATE_BASE_URL'], 'https://api.replicate.com', 'its predictions API'),
      fal: provider(
        'fal',
        ['FAL_KEY', 'FAL_BASE_URL'],
        'https://queue.fal.run',
        'its queue API; status/result/cancel URLs fal returns are followed only on this origin',
      ),
      bfl: provider(
        'Black Forest Labs',
        ['BFL_API_KEY', 'BFL_BASE_URL'],
        'https://api.bfl.ai',
        'polling URLs are followed on this host or its regional siblings (`api.us1.bfl.ai`)',
      ),
      openai: provider(
        'OpenAI',
        ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
        'https://api.openai.com',
        'its images API (synchronous; wrapped so it is polled like the others)',
      ),
    },
  },
} satisfies Section

type Providers = Values<typeof generation.variables>['providers']

/** Remote image-generation providers; each present only when its key is set. */
type ImageProviders = {
  replicate?: { token: string; baseUrl: string }
  fal?: { key: string; baseUrl: string }
  bfl?: { key: string; baseUrl: string }
  openai?: { key: string; baseUrl: string }
}

/** Each remote provider is configured by its key; a blank key counts as unset. */
function providersFrom(p: Providers): ImageProviders {
  const providers: ImageProviders = {}
  const key = (v: string | undefined) => v?.trim() || undefined
  const replicate = key(p.replicate.key)
  const fal = key(p.fal.key)
  const bfl = key(p.bfl.key)
  const openai = key(p.openai.key)
  if (replicate) providers.replicate = { token: replicate, baseUrl: p.replicate.baseUrl }
  if (fal) providers.fal = { key: fal, baseUrl: p.fal.baseUrl }
  if (bfl) providers.bfl = { key: bfl, baseUrl: p.bfl.baseUrl }
  if (openai) providers.openai = { key: openai, baseUrl: p.openai.baseUrl }
  return providers
}

export function generationSettings({ providers: declared, imageWorkers, ...fields }: Values<typeof generation.variables>) {
  const providers = providersFrom(declared)
  if (fields.imageProvider !== 'local' && !providers[fields.imageProvider]) {
    throw invalid([`IMAGE_PROVIDER=${fields.imageProvider} needs ${generation.variables.providers[fields.imageProvider].key.name}`])
  }
  return {
    ...fields,
    providers,
    /** Worker threads that convert images for displays (src/images/conversion-pool.ts); one core is left to the event loop by default. */
    imageWorkers: imageWorkers ?? Math.max(1, availableParallelism() - 1),
  }
}
