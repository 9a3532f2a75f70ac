// Prompts: stored for the user's history and, when a device is named, published to it.
import { randomUUID } from 'node:crypto'
import type { Database } from '../db/client.js'
import { requireAccess } from '../devices/access.js'
import { findDevice, type DeviceRow } from '../devices/repository.js'
import type { DeviceLink } from '../devices/sessions.js'
import { appError } from '../errors.js'
import { findModel } from '../generation/models.js'
import type { PromptInput } from './records.js'
import { insertPrompt, type PromptRow } from './repository.js'
import { findTemplate, renderTemplate } from './templates.js'
import type { PromptMessage } from '../mqtt/contract.js'

// The input type comes from its schema, so it is what POST /api/prompts validates.
export type { PromptInput } from './records.js'

/** A generation size near the display's aspect ratio, longest side 1024, multiples of 16 (what providers accept). */
export function generationSize(dev?: Pick<DeviceRow, 'display'> | null, size?: { width: number; height: number }) {
  if (size) return size
  if (!dev) return { width: 1024, height: 1024 }
  const { width, height } = dev.display
  const scale = 1024 / Math.max(width, height)
  const r16 = (n: number) => Math.max(256, Math.round((n * scale) / 16) * 16)
  return { width: r16(width), height: r16(height) }
}

export type PromptDraft = Parameters<typeof insertPrompt>[1]

export function createPromptService(deps: { db: Database; link: DeviceLink; defaultModel: string }) {
  const { db, link } = deps

  /** Everything that can refuse the prompt, checked; nothing stored yet. */
  async function prepare(userId: string, input: PromptInput): Promise<PromptDraft> {
    const template = input.template ? findTemplate(input.template) : undefined
    if (input.template && !template) throw appError('UNKNOWN_TEMPLATE', `Unknown template ${input.template}`)
    const dev = input.deviceId ? await requireAccess(db, await findDevice(db, input.deviceId), userId, 'manage') : undefined
    const model = input.model ?? dev?.selectedModel ?? deps.defaultModel
    if (!findModel(model)) throw appError('UNKNOWN_MODEL', `Unknown model ${model}`)
    const { width, height } = generationSize(dev, input.size)
    return {
      id: randomUUID(),
      userId,
      deviceId: dev?.id ?? null,
      text: template ? renderTemplate(template, input.text) : input.text,
      negativeText: input.negativeText ?? template?.negativeText ?? null,
      style: input.style ?? template?.style ?? null,
      template: template?.name ?? null,
      model,
      width,
      height,
    }
  }

  /** Sends a stored prompt to its device, once whatever stored it has committed. */
  async function announce(row: PromptRow): Promise<void> {
    if (!row.deviceId) return
    await link.publish(row.deviceId, 'prompt', {
      promptId: row.id,
      text: row.text,
      negativeText: row.negativeText,
      style: row.style,
      model: row.model,
      createdAt: row.createdAt.toISOString(),
    } satisfies PromptMessage)
  }

  async function create(userId: string, input: PromptInput): Promise<PromptRow> {
    const row = await insertPrompt(db, await prepare(userId, input))
    await announce(row)
    return row
  }

  return { create, prepare, announce }
}

export type PromptService = ReturnType<typeof createPromptService>
