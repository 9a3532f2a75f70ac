// The providers this instance can use: `local` always, each remote one when its key is set.
import type { Config } from '../config.js'
import { MODELS } from './models.js'
import type { ImageProvider } from './provider.js'
import { createProvider, isProviderConfigured, REMOTE_PROVIDERS } from './providers/index.js'
import { createLocalProvider } from './providers/local.js'

export function buildProviders(config: Config): Map<string, ImageProvider> {
  const map = new Map<string, ImageProvider>([['local', createLocalProvider({ durationMs: config.generation.localDurationMs })]])
  for (const name of REMOTE_PROVIDERS) if (isProviderConfigured(name, config)) map.set(name, createProvider(name, config))
  return map
}

/** IMAGE_PROVIDER picks the model used when neither the request nor the device names one. */
export function defaultModelId(config: Pick<Config, 'imageProvider'>): string {
  return MODELS.find((m) => m.provider === config.imageProvider)?.id ?? 'local'
}
