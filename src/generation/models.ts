// The models a user may pick, the provider behind each, and its price in credits.
// `local` is free so the zero-config demo works for a brand-new account.
export type ModelInfo = {
  id: string
  title: string
  provider: 'local' | 'replicate' | 'fal' | 'bfl' | 'openai'
  /** The provider's own model id. */
  providerModel: string
  /** Credits taken from user.balance when a job starts (numeric text). */
  price: string
}

export const MODELS: readonly ModelInfo[] = [
  { id: 'local', title: 'Local (deterministic, no network)', provider: 'local', providerModel: 'local', price: '0' },
  {
    id: 'flux-schnell',
    title: 'FLUX.1 [schnell] on Replicate',
    provider: 'replicate',
    providerModel: 'black-forest-labs/flux-schnell',
    price: '1.00',
  },
  { id: 'fal-flux-schnell', title: 'FLUX.1 [schnell] on fal', provider: 'fal', providerModel: 'fal-ai/flux/schnell', price: '1.00' },
  { id: 'flux-pro', title: 'FLUX 1.1 [pro] by Black Forest Labs', provider: 'bfl', providerModel: 'flux-pro-1.1', price: '4.00' },
  { id: 'gpt-image-1', title: 'GPT Image 1 by OpenAI', provider: 'openai', providerModel: 'gpt-image-1', price: '4.00' },
]

export const MODEL_IDS = MODELS.map((m) => m.id)

export function findModel(id: string): ModelInfo | undefined {
  return MODELS.find((m) => m.id === id)
}
