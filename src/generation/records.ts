import { Type, type Static } from 'typebox'
import { MODEL_IDS } from './models.js'
import { Shared, SharedRef } from '../http/typebox.js'
import { promptInputSchema } from '../prompts/records.js'
import type { ImageRow, VariantRow } from '../images/repository.js'
import { imageUrl } from '../images/pipeline.js'
import type { JobRow } from './repository.js'

/** TypeBox, so GenerateRequest (the service's input) is derived from what is validated. */
export const generationRequestSchema = Shared(
  'ImageGenerationRequest',
  Type.Object(
    {
      promptId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      prompt: Type.Optional(SharedRef(promptInputSchema)),
      deviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      model: Type.Optional(Type.String({ enum: MODEL_IDS })),
    },
    {
      description: 'The image-generation request: a stored prompt (promptId) or an inline one, for a device, with a model.',
      additionalProperties: false,
    },
  ),
)
export type GenerateRequest = Static<typeof generationRequestSchema>

const imageFile = {
  type: 'object',
  required: ['format', 'url', 'contentType', 'width', 'height', 'bytes', 'sha256'],
  properties: {
    format: { type: 'string' },
    url: { type: 'string' },
    contentType: { type: 'string' },
    width: { type: 'integer' },
    height: { type: 'integer' },
    bytes: { type: 'integer' },
    sha256: { type: 'string' },
  },
} as const

export const generationResultSchema = {
  $id: 'ImageGenerationResult',
  description: 'The image-generation result: the original as generated and one file per display format.',
  type: 'object',
  required: ['imageId', 'original', 'images'],
  properties: { imageId: { type: 'string' }, original: imageFile, images: { type: 'array', items: imageFile } },
} as const

export const generationResponseSchema = {
  $id: 'ImageGenerationResponse',
  description: 'The image-generation response: the job and, once it succeeded, its result.',
  type: 'object',
  required: [
    'id',
    'status',
    'progress',
    'model',
    'provider',
    'price',
    'deviceId',
    'promptId',
    'error',
    'result',
    'created_at',
    'updated_at',
    'finished_at',
  ],
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed', 'canceled'] },
    progress: { type: 'integer', minimum: 0, maximum: 100 },
    model: { type: 'string' },
    provider: { type: 'string' },
    price: { type: 'string', description: 'credits (numeric text)' },
    deviceId: { type: ['string', 'null'] },
    promptId: { type: ['string', 'null'] },
    error: {
      anyOf: [
        { type: 'null' },
        { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
      ],
    },
    result: { anyOf: [{ type: 'null' }, { $ref: 'ImageGenerationResult#' }] },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
    finished_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const

export function toResult(baseUrl: string, image: ImageRow, variants: VariantRow[]) {
  return {
    imageId: image.id,
    original: {
      format: 'original',
      url: imageUrl(baseUrl, image.id, 'original'),
      contentType: image.contentType,
      width: image.width,
      height: image.height,
      bytes: image.bytes,
      sha256: image.sha256,
    },
    images: variants.map((v) => ({
      format: v.format,
      url: imageUrl(baseUrl, image.id, v.format),
      contentType: v.contentType,
      width: v.width,
      height: v.height,
      bytes: v.bytes,
      sha256: v.sha256,
    })),
  }
}

export function toGenerationResponse(baseUrl: string, job: JobRow, image?: ImageRow, variants: VariantRow[] = []) {
  // A retryable provider error is shown while the job is still trying; it is not the outcome.
  const error =
    job.status === 'failed' || job.status === 'canceled'
      ? job.errorCode
        ? { code: job.errorCode, message: job.errorMessage ?? '' }
        : null
      : null
  return {
    id: job.id,
    status: job.status,
    progress: job.status === 'succeeded' ? 100 : job.progress,
    model: job.model,
    provider: job.provider,
    price: job.price,
    deviceId: job.deviceId,
    promptId: job.promptId,
    error,
    result: image ? toResult(baseUrl, image, variants) : null,
    created_at: job.createdAt.toISOString(),
    updated_at: job.updatedAt.toISOString(),
    finished_at: job.finishedAt?.toISOString() ?? null,
  }
}
