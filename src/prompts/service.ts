// Prompts: stored for the user's history and, when a device is named, published to it.
import { randomUUID } from 'node:crypto'
import type { Database, Executor } from '../db/client.js'
import { accessibleDevice } from '../devices/access.js'
import type { DeviceRow } from '../devices/repository.js'
import type { DurableLink, StagedMessage } from '../devices/sessions.js'
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

export function createPromptService(deps: { db: Database; link: DurableLink; defaultModel: string }) {
  const { db, link } = deps

  /** Everything that can refuse the prompt, checked; nothing stored yet. */
  async function prepare(userId: string, input: PromptInput): Promise<PromptDraft> {
    const template = input.template ? findTemplate(input.template) : undefined
    if (input.template && !template) throw appError('UNKNOWN_TEMPLATE', `Unknown template ${input.template}`)
    const dev = input.deviceId ? await accessibleDevice(db, input.deviceId, userId, 'manage') : undefined
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

  /**
   * Stores a prompt's message to its device in the transaction that stores the prompt: both or
   * neither, whatever crash or full disk comes between. `send` after the commit.
   */
  async function stage(tx: Executor, row: PromptRow): Promise<StagedMessage | undefined> {
    if (!row.deviceId) return undefined
    return link.stage(tx, row.deviceId, 'prompt', {
      promptId: row.id,
      text: row.text,
      negativeText: row.negativeText,
      style: row.style,
      model: row.model,
      createdAt: row.createdAt.toISOString(),
    } satisfies PromptMessage)
  }

  async function create(userId: string, input: PromptInput): Promise<PromptRow> {
    const draft = await prepare(userId, input)
    const { row, message } = await db.transaction(async (tx) => {
      const row = await insertPrompt(tx, draft)
      return { row, message: await stage(tx, row) }
    })
    await message?.send()
    return row
  }

  return { create, prepare, stage }
}

export type PromptService = ReturnType<typeof createPromptService>
