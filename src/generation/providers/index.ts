// Builds a remote image provider from the validated config. The `local` provider is built by
// the generation module itself; this covers the ones that need a key.
import type { Config } from '../../config.js'
import { ProviderError, type ImageProvider } from '../provider.js'
import { createBflProvider } from './bfl.js'
import { createFalProvider } from './fal.js'
import { createOpenAIProvider } from './openai.js'
import { createReplicateProvider } from './replicate.js'

export const REMOTE_PROVIDERS = ['replicate', 'fal', 'bfl', 'openai'] as const
export type RemoteProviderName = (typeof REMOTE_PROVIDERS)[number]

/** The setting that enables each provider, for messages that tell the operator what to set. */
const PROVIDER_KEY_SETTINGS: Record<RemoteProviderName, string> = {
  replicate: 'REPLICATE_API_TOKEN',
  fal: 'FAL_KEY',
  bfl: 'BFL_API_KEY',
  openai: 'OPENAI_API_KEY',
}

export type ProviderOptions = {
  /** Per-request timeout for the provider's API calls (OpenAI: the whole generation request). */
  timeoutMs?: number
}

export function isProviderConfigured(name: RemoteProviderName, config: Pick<Config, 'providers'>): boolean {
  return Boolean(config.providers[name])
}

/** Throws PROVIDER_NOT_CONFIGURED (not retryable) when the provider's key is not set. */
export function createProvider(name: RemoteProviderName, config: Pick<Config, 'providers'>, options: ProviderOptions = {}): ImageProvider {
  const notConfigured = () =>
    new ProviderError(`${name} is not configured: set ${PROVIDER_KEY_SETTINGS[name]}`, 'PROVIDER_NOT_CONFIGURED', false)
  const p = config.providers
  switch (name) {
    case 'replicate':
      if (!p.replicate) throw notConfigured()
      return createReplicateProvider({ ...p.replicate, timeoutMs: options.timeoutMs })
    case 'fal':
      if (!p.fal) throw notConfigured()
      return createFalProvider({ ...p.fal, timeoutMs: options.timeoutMs })
    case 'bfl':
      if (!p.bfl) throw notConfigured()
      return createBflProvider({ ...p.bfl, timeoutMs: options.timeoutMs })
    case 'openai':
      if (!p.openai) throw notConfigured()
      return createOpenAIProvider({ ...p.openai, timeoutMs: options.timeoutMs })
    default:
      throw new ProviderError(`unknown image provider: ${String(name)}`, 'PROVIDER_UNKNOWN', false)
  }
}
