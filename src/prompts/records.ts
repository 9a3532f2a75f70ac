import { Type, type Static } from 'typebox'
import { MODEL_IDS } from '../generation/models.js'
import { Shared } from '../http/typebox.js'
import { STYLES, TEMPLATES } from './templates.js'
import type { PromptRow } from './repository.js'

const PROMPT_TEXT_MAX = 1000
const NEGATIVE_TEXT_MAX = 500

/** TypeBox, so PromptInput (the service's input) is derived from what is validated. */
export const promptInputSchema = Shared(
  'PromptInput',
  Type.Object(
    {
      text: Type.String({ minLength: 1, maxLength: PROMPT_TEXT_MAX, description: 'the prompt, or the subject when a template is used' }),
      negativeText: Type.Optional(Type.String({ maxLength: NEGATIVE_TEXT_MAX })),
      style: Type.Optional(Type.String({ enum: STYLES })),
      template: Type.Optional(Type.String({ enum: TEMPLATES.map((t) => t.name) })),
      deviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      model: Type.Optional(Type.String({ enum: MODEL_IDS })),
      size: Type.Optional(
        Type.Object(
          { width: Type.Integer({ minimum: 64, maximum: 2048 }), height: Type.Integer({ minimum: 64, maximum: 2048 }) },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
)
export type PromptInput = Static<typeof promptInputSchema>

export const promptRecordSchema = {
  $id: 'Prompt',
  type: 'object',
  required: ['id', 'userId', 'deviceId', 'text', 'negativeText', 'style', 'template', 'model', 'width', 'height', 'created_at'],
  properties: {
    id: { type: 'string' },
    userId: { type: 'string' },
    deviceId: { type: ['string', 'null'] },
    text: { type: 'string' },
    negativeText: { type: ['string', 'null'] },
    style: { type: ['string', 'null'] },
    template: { type: ['string', 'null'] },
    model: { type: 'string' },
    width: { type: 'integer' },
    height: { type: 'integer' },
    created_at: { type: 'string', format: 'date-time' },
  },
} as const

export const promptTemplatesSchema = {
  $id: 'PromptTemplates',
  type: 'object',
  required: ['templates'],
  properties: {
    templates: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'title', 'text', 'style'],
        properties: {
          name: { type: 'string' },
          title: { type: 'string' },
          text: { type: 'string' },
          negativeText: { type: 'string' },
          style: { type: 'string' },
        },
      },
    },
  },
} as const

export function toPromptRecord(p: PromptRow) {
  return {
    id: p.id,
    userId: p.userId,
    deviceId: p.deviceId,
    text: p.text,
    negativeText: p.negativeText,
    style: p.style,
    template: p.template,
    model: p.model,
    width: p.width,
    height: p.height,
    created_at: p.createdAt.toISOString(),
  }
}
