// A device's day plan (GET / PUT / DELETE /api/device/:id/schedule) and what happens when a turn
// of it comes up: the item's image is sent exactly as a manual send would (converted for the
// display, devices/{id}/image), a prompt item starts a generation charged like any other, and the
// retained config tells the device its sleep windows and when the next change is.
import type { Database } from '../db/client.js'
import { findDevices, type DeviceRow } from '../devices/repository.js'
import type { DeviceService } from '../devices/service.js'
import type { DeviceLink } from '../devices/sessions.js'
import { AppError, appError } from '../errors.js'
import { insertEvent } from '../events/repository.js'
import type { GenerateRequest, GenerationService } from '../generation/service.js'
import { type ImageSend, sendImages } from '../images/delivery.js'
import { profileKey, type StoredImage, storeImage } from '../images/pipeline.js'
import type { ConversionPool } from '../images/conversion-pool.js'
import type { DisplayProfile } from '../images/profiles.js'
import { findImage, findVariants } from '../images/repository.js'
import type { ScreenService } from '../screens/service.js'
import type { ObjectStore } from '../storage/store.js'
import { checkPlan, itemIndex, PlanError, type SchedulePlan, turnAt } from './plan.js'
import { itemImageId, requirePlaylist } from './playlists.js'
import {
  deleteSchedule,
  findPlaylists,
  findSchedule,
  listItems,
  listItemsOf,
  type PlaylistItemRow,
  type PlaylistRow,
  rememberItemImage,
  saveSchedule,
  type ScheduleRow,
} from './repository.js'
import type { ScheduleInfo } from '../mqtt/contract.js'
import type { ScheduleCurrent } from './tables.js'
import { scheduleInfo } from './wire.js'

type Notify = (userId: string, message: { title: string; body: string; url?: string }) => Promise<unknown>

export type ScheduleDeps = {
  db: Database
  storage: ObjectStore
  images: ConversionPool
  link: DeviceLink
  baseUrl: string
  devices: Pick<DeviceService, 'refreshConfig' | 'publishConfig'>
  generation: () => Pick<GenerationService, 'create'>
  /** A screen item's picture for a frame. */
  screens?: Pick<ScreenService, 'imageFor'>
  notify?: Notify
  clock: () => Date
  log?: { error: (o: object, m?: string) => void }
  /** Called when a plan was saved: the scheduler looks at once instead of at its next tick. */
  poke?: () => void
}

/** A display profile's identity: an upload is converted once per distinct display. */

type Lists = Map<string, { playlist: PlaylistRow; items: PlaylistItemRow[] }>

async function loadLists(db: Database, plans: readonly SchedulePlan[]): Promise<Lists> {
  const ids = [...new Set(plans.flatMap((p) => p.rules.map((r) => r.playlistId)))]
  const [playlists, items] = await Promise.all([findPlaylists(db, ids), listItemsOf(db, ids)])
  return new Map(playlists.map((p) => [p.id, { playlist: p, items: items.get(p.id) ?? [] }]))
}

/**
 * What the turns of one claimed batch share, read once for all of them: the devices, the
 * playlists with their items, and each stored image sent (many frames show the same pictures).
 */
export type TurnMemo = {
  devices: Map<string, DeviceRow>
  lists: Lists
  images: Map<string, Promise<StoredImage | undefined>>
  /** Images the batch's turns send, with the config each device gets after it (see flush). */
  sends: Array<{ send: ImageSend; info: ScheduleInfo | null }>
  /** Uploads being converted for a display in this batch, by item and display profile. */
  conversions: Map<string, Promise<StoredImage>>
}

const secondsOf = (lists: Lists) => (id: string) => {
  const l = lists.get(id)
  return l?.items.length ? l.playlist.itemSeconds : undefined
}

export function createScheduleService(deps: ScheduleDeps) {
  const { db } = deps

  /** What the plan says now, with the item a playing turn shows. */
  function nowOf(plan: SchedulePlan, lists: Lists, deviceId: string, at: Date) {
    const turn = turnAt(plan, at, secondsOf(lists))
    if (turn.state !== 'playing') return { turn, item: undefined, playlist: undefined }
    const { playlist, items } = lists.get(turn.playlistId)!
    const index = itemIndex(playlist.mode, items.length, turn.slot, `${deviceId}@${turn.windowStart.toISOString()}`)
    return { turn, item: items[index], playlist }
  }

  function view(row: ScheduleRow, lists: Lists) {
    const { turn, item } = nowOf(row, lists, row.deviceId, deps.clock())
    return {
      deviceId: row.deviceId,
      timeZone: row.timeZone,
      rules: row.rules,
      sleep: row.sleep,
      now: {
        state: turn.state,
        playlistId: turn.state === 'playing' ? turn.playlistId : null,
        itemId: item?.id ?? null,
        sleepingUntil: turn.state === 'sleeping' ? turn.until.toISOString() : null,
      },
      nextChangeAt: turn.nextChangeAt?.toISOString() ?? null,
      lastTurn: row.current ?? null,
      updatedAt: row.updatedAt.toISOString(),
    }
  }

  // get, put and remove act on a device the caller may read or manage: their routes' deviceAccess checked it.
  async function get(dev: DeviceRow) {
    const row = await findSchedule(db, dev.id)
    if (!row) throw appError('SCHEDULE_NOT_FOUND')
    return view(row, await loadLists(db, [row]))
  }

  async function put(userId: string, dev: DeviceRow, plan: SchedulePlan) {
    try {
      checkPlan(plan)
    } catch (err) {
      if (err instanceof PlanError) throw appError('VALIDATION_ERROR', err.message)
      throw err
    }
    for (const [i, rule] of plan.rules.entries()) {
      const field = `rules[${i}].playlistId`
      const p = await requirePlaylist(db, rule.playlistId, userId, 'read').catch((err) => {
        throw err instanceof AppError && err.code === 'PLAYLIST_NOT_FOUND'
          ? appError('PLAYLIST_NOT_FOUND', `${field}: no such playlist`)
          : err
      })
      // A frame plays its owner's playlists, or its organization's: not another organization's
      // (whose items were added by people with no say over this frame).
      const fits = p.organizationId ? p.organizationId === dev.organizationId : p.userId === userId
      if (!fits) throw appError('VALIDATION_ERROR', `${field}: the playlist "${p.name}" is neither yours nor this frame's organization's`)
      if (!(await listItems(db, p.id)).length) throw appError('VALIDATION_ERROR', `${field}: the playlist "${p.name}" has no items`)
    }
    const row = await saveSchedule(
      db,
      { deviceId: dev.id, userId, timeZone: plan.timeZone, rules: plan.rules, sleep: plan.sleep },
      deps.clock(),
    )
    await insertEvent(db, {
      type: 'device.schedule',
      deviceId: dev.id,
      userId,
      organizationId: dev.organizationId,
      data: { rules: plan.rules.length, sleep: plan.sleep.length, timeZone: plan.timeZone },
    })
    deps.poke?.()
    return view(row, await loadLists(db, [row]))
  }

  async function remove(dev: DeviceRow) {
    if (!(await deleteSchedule(db, dev.id))) throw appError('SCHEDULE_NOT_FOUND')
    await deps.devices.refreshConfig(dev, null)
  }

  /** Records an item that could not be shown, and tells whoever added it (it is theirs to fix). */
  async function skipped(dev: DeviceRow, playlist: PlaylistRow, item: PlaylistItemRow, reason: string, message: string, notify: boolean) {
    await insertEvent(db, {
      type: 'schedule.skipped',
      deviceId: dev.id,
      userId: item.addedBy,
      organizationId: dev.organizationId,
      data: { playlistId: playlist.id, itemId: item.id, kind: item.kind, reason, message },
    })
    if (!notify) return
    await deps.notify?.(item.addedBy, {
      title: `${dev.name}: a scheduled picture was skipped`,
      body: `"${playlist.name}": ${message}`,
      url: `/devices/${dev.id}`,
    })
  }

  async function prepare(rows: readonly ScheduleRow[]): Promise<TurnMemo> {
    const [devices, lists] = await Promise.all([
      findDevices(
        db,
        rows.map((r) => r.deviceId),
      ),
      loadLists(db, rows),
    ])
    return { devices: new Map(devices.map((d) => [d.id, d])), lists, images: new Map(), sends: [], conversions: new Map() }
  }

  function storedImage(memo: TurnMemo, imageId: string): Promise<StoredImage | undefined> {
    let found = memo.images.get(imageId)
    if (!found) {
      found = findImage(db, imageId).then(async (image) => (image ? { image, variants: await findVariants(db, image.id) } : undefined))
      memo.images.set(imageId, found)
    }
    return found
  }

  /**
   * What one item shows on the device: the stored image to send (an upload converted for this
   * display the first time), or, for a prompt, the generation job started (it sends its image).
   */
  async function show(memo: TurnMemo, dev: DeviceRow, item: PlaylistItemRow) {
    const profile = dev.display as DisplayProfile
    if (item.kind === 'prompt') {
      // Generated as whoever added the item: the prompt is theirs, and so is the price.
      const job = await deps.generation().create(item.addedBy, {
        promptId: item.ref,
        deviceId: dev.id,
        model: (item.model ?? undefined) as GenerateRequest['model'],
      })
      return { jobId: job.id }
    }
    if (item.kind === 'screen') {
      // Drawn for this frame now (stored only when its bytes changed); the frame then follows the screen.
      if (!deps.screens) throw appError('SCREEN_NOT_FOUND', 'screens are not available')
      return { stored: await deps.screens.imageFor(item.ref, dev) }
    }
    const imageId = itemImageId(item, profile)
    const stored = imageId ? await storedImage(memo, imageId) : undefined
    if (stored) return { stored }
    if (item.kind === 'image') throw appError('IMAGE_NOT_FOUND', 'the image was deleted')
    // Frames of one display in the same batch share one conversion.
    const key = `${item.id}|${profileKey(profile)}`
    let converting = memo.conversions.get(key)
    if (!converting) {
      converting = convertUpload(item, profile, dev.id)
      memo.conversions.set(key, converting)
    }
    return { stored: await converting }
  }

  /** An upload converted for a display, stored as its adder's image and remembered on the item. */
  async function convertUpload(item: PlaylistItemRow, profile: DisplayProfile, deviceId: string): Promise<StoredImage> {
    const original = await deps.storage.get(item.ref).catch(() => null)
    if (!original) throw appError('NOT_FOUND', 'the upload was deleted')
    let converted: StoredImage
    try {
      converted = await storeImage(
        { db, storage: deps.storage, images: deps.images },
        { userId: item.addedBy, deviceId, source: 'upload', original: original.body, profile },
      )
    } catch (err) {
      // A file the converter cannot read never will be: skipped, not retried.
      if (err instanceof AppError) throw err
      throw appError('UNSUPPORTED_MEDIA_TYPE', 'the upload could not be converted for this display')
    }
    await rememberItemImage(db, item.id, profileKey(profile), converted.image.id)
    return converted
  }

  /**
   * One due schedule, at `now`: works out the turn and, unless it is the one fired last, what it
   * shows (nothing while asleep). An image to send is left in the batch's memo for flush, which
   * sends every image of the batch together; otherwise the config with the next change is
   * published here. Missed turns (downtime, a sleep) are never replayed: only the turn of `now` is.
   */
  async function fire(row: ScheduleRow, now: Date, memo: TurnMemo): Promise<{ nextAt: Date | null; current: ScheduleCurrent | null }> {
    const dev = memo.devices.get(row.deviceId)
    if (!dev) return { nextAt: null, current: null }
    const { turn, item, playlist } = nowOf(row, memo.lists, row.deviceId, now)
    if (row.current?.key === turn.key) return { nextAt: turn.nextChangeAt, current: row.current }
    const current: ScheduleCurrent = { key: turn.key, state: turn.state, since: now.toISOString() }
    if (turn.state === 'sleeping') current.sleepingUntil = turn.until.toISOString()
    const woke = row.current?.state === 'sleeping' && turn.state !== 'sleeping' ? now.toISOString() : row.current?.wokeAt
    if (woke) current.wokeAt = woke
    const info = () => scheduleInfo({ ...row, nextAt: turn.nextChangeAt, current })
    if (turn.state === 'playing' && item && playlist) {
      current.playlistId = playlist.id
      current.itemId = item.id
      try {
        const shown = await show(memo, dev, item)
        if ('stored' in shown && shown.stored) {
          current.imageId = shown.stored.image.id
          const by = { userId: row.userId, scheduled: { playlistId: playlist.id, itemId: item.id } }
          memo.sends.push({ send: { deviceId: dev.id, profile: dev.display as DisplayProfile, stored: shown.stored, by }, info: info() })
          return { nextAt: turn.nextChangeAt, current }
        }
      } catch (err) {
        if (!(err instanceof AppError)) throw err
        current.skipped = err.code
        const why = err.code === 'INSUFFICIENT_BALANCE' ? `${err.message}.` : err.message
        // Said once: the same item skipped for the same reason again is recorded, not notified.
        const again = row.current?.skipped === err.code && row.current?.itemId === item.id
        await skipped(dev, playlist, item, err.code, why, !again)
      }
    }
    await deps.devices.refreshConfig(dev, info())
    return { nextAt: turn.nextChangeAt, current }
  }

  /**
   * Sends the batch's images together, then each device's config (its version raised with the
   * image). Answers the devices whose send failed: their turns are looked at again.
   */
  async function flush(memo: TurnMemo): Promise<ReadonlySet<string>> {
    const sends = memo.sends
    memo.sends = []
    if (!sends.length) return new Set()
    const delivery = { db, link: deps.link, storage: deps.storage, baseUrl: deps.baseUrl }
    let updated: Map<string, DeviceRow>
    try {
      updated = await sendImages(
        delivery,
        sends.map((s) => s.send),
      )
    } catch (err) {
      deps.log?.error({ err }, 'sending a batch of scheduled images failed; trying again in a minute')
      return new Set(sends.map((s) => s.send.deviceId))
    }
    const failed = new Set<string>()
    await Promise.all(
      sends.map(async ({ send, info }) => {
        const dev = updated.get(send.deviceId)
        if (dev) await deps.devices.publishConfig(dev, info).catch(() => failed.add(send.deviceId))
      }),
    )
    return failed
  }

  return { get, put, remove, prepare, fire, flush }
}

export type ScheduleService = ReturnType<typeof createScheduleService>
