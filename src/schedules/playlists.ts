// Playlists: what a frame shows in turn. Owned by a user or an organization with the devices'
// rules (the owner and organization owners and admins change it, members read it, anyone else
// gets 404). Every item is checked when added: an upload, image, prompt or screen the caller may not see
// is 404, as if it did not exist.
import { randomUUID } from 'node:crypto'
import type { Database, Executor } from '../db/client.js'
import { canManageWithRole } from '../devices/access.js'
import { findMemberRole } from '../devices/repository.js'
import { AppError, appError } from '../errors.js'
import { profileKey } from '../images/pipeline.js'
import type { DisplayProfile } from '../images/profiles.js'
import { findImage } from '../images/repository.js'
import { findPrompt } from '../prompts/repository.js'
import { requireScreen } from '../screens/access.js'
import type { ObjectStore } from '../storage/store.js'
import { ownsKey } from '../uploads/service.js'
import {
  countItems,
  countSchedulesUsing,
  deleteItem,
  deletePlaylist,
  findPlaylist,
  insertItem,
  insertPlaylist,
  listItems,
  listItemsOf,
  listPlaylists,
  lockPlaylist,
  type PlaylistItemRow,
  type PlaylistRow,
  setPositions,
  updatePlaylist,
} from './repository.js'
import type { PlaylistItemKind, PlaylistMode } from './tables.js'

const MAX_ITEMS = 500

export type ItemInput =
  | { kind: 'upload'; key: string }
  | { kind: 'image'; imageId: string }
  | { kind: 'prompt'; promptId: string; model?: string }
  | { kind: 'screen'; screenId: string }
export type PlaylistInput = { name: string; mode: PlaylistMode; itemSeconds: number; organizationId?: string; items?: ItemInput[] }
export type PlaylistPatch = Partial<Pick<PlaylistInput, 'name' | 'mode' | 'itemSeconds'>>

type Access = 'manage' | 'read'

/**
 * The stored image an item shows on a display, when that is known before its turn: an image, or
 * an upload already converted for the profile. A prompt's picture is generated at its turn.
 */
export function itemImageId(item: PlaylistItemRow, profile: DisplayProfile): string | undefined {
  if (item.kind === 'image') return item.ref
  if (item.kind === 'upload') return item.images[profileKey(profile)]
  return undefined
}
type ResolvedItem = { kind: PlaylistItemKind; ref: string; model: string | null }

async function accessTo(db: Executor, p: PlaylistRow, userId: string): Promise<Access | null> {
  if (p.userId === userId) return 'manage'
  if (!p.organizationId) return null
  const role = await findMemberRole(db, p.organizationId, userId)
  if (role === null) return null
  return canManageWithRole(role) ? 'manage' : 'read'
}

/** 404 when the caller may not see the playlist, 403 when they may only read it. */
export async function requirePlaylist(db: Executor, id: string, userId: string, need: Access): Promise<PlaylistRow> {
  const p = await findPlaylist(db, id)
  const access = p ? await accessTo(db, p, userId) : null
  if (!p || !access) throw appError('PLAYLIST_NOT_FOUND')
  if (need === 'manage' && access !== 'manage')
    throw appError('FORBIDDEN', 'Only its owner or an organization admin may change this playlist')
  return p
}

/** The API's view of an item: its reference under the name the caller gave it. */
function itemView(i: PlaylistItemRow) {
  const ref =
    i.kind === 'upload'
      ? { key: i.ref }
      : i.kind === 'image'
        ? { imageId: i.ref }
        : i.kind === 'screen'
          ? { screenId: i.ref }
          : { promptId: i.ref, ...(i.model ? { model: i.model } : {}) }
  return { id: i.id, kind: i.kind, position: i.position, ...ref }
}

function playlistView(p: PlaylistRow, items: PlaylistItemRow[]) {
  return {
    id: p.id,
    name: p.name,
    mode: p.mode,
    itemSeconds: p.itemSeconds,
    userId: p.userId,
    organizationId: p.organizationId,
    items: items.map(itemView),
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  }
}

export function createPlaylistService(deps: { db: Database; storage: ObjectStore; minSeconds: number }) {
  const { db, storage } = deps

  function checkSeconds(itemSeconds: number | undefined) {
    if (itemSeconds !== undefined && itemSeconds < deps.minSeconds)
      throw appError('VALIDATION_ERROR', `itemSeconds: at least ${deps.minSeconds} (SCHEDULE_MIN_SECONDS)`)
  }

  /** What an item refers to, if the caller may see it; 404 naming the field otherwise. */
  async function resolveItem(userId: string, item: ItemInput, field: string): Promise<ResolvedItem> {
    if (item.kind === 'upload') {
      const found = ownsKey(userId, item.key) && (await storage.head(item.key).catch(() => null))
      if (!found) throw appError('NOT_FOUND', `${field}.key: no such upload of yours`)
      return { kind: 'upload', ref: item.key, model: null }
    }
    if (item.kind === 'image') {
      const image = await findImage(db, item.imageId)
      if (!image || image.userId !== userId) throw appError('IMAGE_NOT_FOUND', `${field}.imageId: no such image of yours`)
      return { kind: 'image', ref: image.id, model: null }
    }
    if (item.kind === 'screen') {
      const screen = await requireScreen(db, item.screenId, userId, 'read').catch((err) => {
        throw err instanceof AppError && err.code === 'SCREEN_NOT_FOUND'
          ? appError('SCREEN_NOT_FOUND', `${field}.screenId: no such screen`)
          : err
      })
      return { kind: 'screen', ref: screen.id, model: null }
    }
    const prompt = await findPrompt(db, item.promptId)
    if (!prompt || prompt.userId !== userId) throw appError('PROMPT_NOT_FOUND', `${field}.promptId: no such prompt of yours`)
    return { kind: 'prompt', ref: prompt.id, model: item.model ?? null }
  }

  async function view(p: PlaylistRow) {
    return playlistView(p, await listItems(db, p.id))
  }

  return {
    async list(userId: string) {
      const rows = await listPlaylists(db, userId, 500)
      const items = await listItemsOf(
        db,
        rows.map((p) => p.id),
      )
      return rows.map((p) => playlistView(p, items.get(p.id) ?? []))
    },

    async create(userId: string, input: PlaylistInput) {
      checkSeconds(input.itemSeconds)
      if (input.organizationId && !canManageWithRole(await findMemberRole(db, input.organizationId, userId)))
        throw appError('FORBIDDEN', 'Only owners and admins of the organization create its playlists')
      const items = input.items ?? []
      if (items.length > MAX_ITEMS) throw appError('PLAYLIST_FULL')
      // Every reference is checked before anything is stored: a refused item leaves no playlist behind.
      const resolved: ResolvedItem[] = []
      for (const [i, item] of items.entries()) resolved.push(await resolveItem(userId, item, `items[${i}]`))
      const p = await db.transaction(async (tx) => {
        const row = await insertPlaylist(tx, {
          id: randomUUID(),
          userId,
          organizationId: input.organizationId ?? null,
          name: input.name,
          mode: input.mode,
          itemSeconds: input.itemSeconds,
        })
        for (const [position, r] of resolved.entries())
          await insertItem(tx, { id: randomUUID(), playlistId: row.id, position, addedBy: userId, ...r })
        return row
      })
      return view(p)
    },

    async get(userId: string, id: string) {
      return view(await requirePlaylist(db, id, userId, 'read'))
    },

    async patch(userId: string, id: string, changes: PlaylistPatch) {
      const p = await requirePlaylist(db, id, userId, 'manage')
      checkSeconds(changes.itemSeconds)
      return view((await updatePlaylist(db, p.id, changes)) ?? p)
    },

    async remove(userId: string, id: string) {
      const p = await requirePlaylist(db, id, userId, 'manage')
      const using = await countSchedulesUsing(db, p.id)
      if (using)
        throw appError(
          'PLAYLIST_IN_USE',
          `The playlist is in ${using} device schedule${using === 1 ? '' : 's'}; change ${using === 1 ? 'it' : 'them'} first`,
        )
      await deletePlaylist(db, p.id)
    },

    /** Adds an item at `position` (default: the end); the items after it move down one. */
    async addItem(userId: string, id: string, item: ItemInput, position?: number) {
      const p = await requirePlaylist(db, id, userId, 'manage')
      const resolved = await resolveItem(userId, item, 'item')
      await db.transaction(async (tx) => {
        // Counted inside the transaction, under a lock on the playlist row: two adds racing for the last place cannot both pass.
        await lockPlaylist(tx, p.id)
        if ((await countItems(tx, p.id)) >= MAX_ITEMS) throw appError('PLAYLIST_FULL')
        const ids = (await listItems(tx, p.id)).map((i) => i.id)
        const at = Math.min(position ?? ids.length, ids.length)
        const created = await insertItem(tx, { id: randomUUID(), playlistId: p.id, position: ids.length, addedBy: userId, ...resolved })
        ids.splice(at, 0, created.id)
        await setPositions(tx, p.id, ids)
      })
      await updatePlaylist(db, p.id, {})
      return view(p)
    },

    async removeItem(userId: string, id: string, itemId: string) {
      const p = await requirePlaylist(db, id, userId, 'manage')
      await db.transaction(async (tx) => {
        if (!(await deleteItem(tx, p.id, itemId))) throw appError('PLAYLIST_ITEM_NOT_FOUND')
        await setPositions(
          tx,
          p.id,
          (await listItems(tx, p.id)).map((i) => i.id),
        )
      })
      await updatePlaylist(db, p.id, {})
      return view(p)
    },

    /** A new order: `itemIds` must name every item of the playlist exactly once. */
    async reorder(userId: string, id: string, itemIds: string[]) {
      const p = await requirePlaylist(db, id, userId, 'manage')
      await db.transaction(async (tx) => {
        const current = new Set((await listItems(tx, p.id)).map((i) => i.id))
        const given = new Set(itemIds)
        if (given.size !== itemIds.length) throw appError('VALIDATION_ERROR', 'itemIds: names an item twice')
        if (given.size !== current.size || itemIds.some((i) => !current.has(i)))
          throw appError('VALIDATION_ERROR', 'itemIds: must name every item of the playlist exactly once')
        await setPositions(tx, p.id, itemIds)
      })
      await updatePlaylist(db, p.id, {})
      return view(p)
    },
  }
}

export type PlaylistService = ReturnType<typeof createPlaylistService>
