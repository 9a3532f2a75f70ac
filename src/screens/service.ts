// Screens: a template with data, drawn at each frame's size and sent through the display pipeline.
// Owned like playlists (the owner and organization owners and admins change it, members read and
// show it, anyone else gets 404). Data arrives by webhook or from a polled URL; each arrival
// re-renders the screen for the frames showing it, and a frame whose converted bytes did not
// change is sent nothing. A render or fetch that fails leaves every frame with its last good
// picture and the error on the screen's record.
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { findUserById } from '../auth/users-repository.js'
import type { Database } from '../db/client.js'
import { accessibleDevice, canManageWithRole, rolesOf } from '../devices/access.js'
import { matchesHash, sha256 as sha256Text } from '../devices/codes.js'
import { findMemberRole, type DeviceRow } from '../devices/repository.js'
import type { DeviceLink } from '../devices/sessions.js'
import { AppError, appError } from '../errors.js'
import type { ErrorCode } from '../error-codes.js'
import type { ConversionPool } from '../images/conversion-pool.js'
import { deliverImage, sendImages, type ImageSend } from '../images/delivery.js'
import { mainVariant } from '../images/convert.js'
import { profileKey, type StoredImage, storeImage } from '../images/pipeline.js'
import { DEFAULT_DISPLAY, type DisplayProfile, type Variant } from '../images/profiles.js'
import { findImage, findVariants } from '../images/repository.js'
import type { ObjectStore } from '../storage/store.js'
import { requireScreen } from './access.js'
import { builtinScreens } from './builtin/index.js'
import { RecipeError } from './recipes/errors.js'
import { trmnlFrameworkCss } from './recipes/framework-css.js'
import type { ImportedRecipe } from './recipes/import.js'
import type { ScreenDeviceContext } from './context.js'
import { addressPolicy, fetchSource, SourceError } from './fetch-source.js'
import type { Renderer, RenderJob } from './render-job.js'
import type { ScreenRenderer } from './renderers.js'
import {
  claimDueSources,
  countPlaylistItemsUsing,
  deleteScreen,
  type DeviceShowing,
  findDevicesShowing,
  findRender,
  findScreen,
  insertScreen,
  listScreens,
  saveRender,
  type ScreenRow,
  setScreenData,
  setScreenError,
  updateScreen,
} from './repository.js'
import { openHeaders, sealHeaders } from './sealing.js'

type ScreenSettings = {
  fetchTimeoutMs: number
  fetchMaxBytes: number
  minPollSeconds: number
  allowPrivateSources: boolean
}

export type SourceInput = { url: string; everySeconds: number; headers?: Record<string, string> }
export type ScreenInput = {
  name: string
  template?: string
  builtin?: string
  css?: string
  variables?: Record<string, unknown>
  timeZone?: string
  renderer?: Renderer
  source?: SourceInput
  allowPrivate?: boolean
  organizationId?: string
}
export type ScreenPatch = Partial<Omit<ScreenInput, 'organizationId' | 'source'>> & { source?: SourceInput | null }
/** An unsaved draft to preview: what it leaves out is the saved screen's. */
export type ScreenDraft = Pick<ScreenInput, 'template' | 'builtin' | 'css' | 'variables' | 'timeZone' | 'renderer'> & { deviceId?: string }

/** A screen's failure as the API answers it: the code says which, the message what. */
class ScreenFailure extends AppError {}
const failure = (code: ErrorCode, message: string) => {
  const e = appError(code, message)
  return new ScreenFailure(e.statusCode, e.code, e.message)
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const newToken = () => `scr_${randomBytes(32).toString('base64url')}`

/**
 * Whether the screen reads the frame itself (its template, or a built-in's template or prepare):
 * then each frame gets its own render, not each kind of frame.
 */
function readsDevice(s: Pick<ScreenRow, 'template' | 'builtin'>): boolean {
  const b = s.builtin ? builtinScreens[s.builtin] : undefined
  const sources = b ? [b.template, b.prepare.toString()] : [s.template ?? '']
  return sources.some((text) => /\bdevice\b/.test(text))
}

/** How often a built-in screen with no data source (a clock, a frame's status) is drawn again. */
const REDRAW_SECONDS = 60

/** The PNG a preview answers: the panel's own PNG variant when it has one, the main variant otherwise. */
function previewVariant(variants: Variant[], profile: DisplayProfile): Variant | undefined {
  const main = mainVariant(profile)
  return variants.find((v) => v.contentType === 'image/png' && v.format !== 'png') ?? variants.find((v) => v.format === main) ?? variants[0]
}

function deviceContext(dev: DeviceRow): ScreenDeviceContext {
  const profile = dev.display as DisplayProfile
  const reported = dev.reported as { battery?: number; firmware?: string; rssi?: number }
  return {
    id: dev.id,
    name: dev.name,
    width: profile.width,
    height: profile.height,
    ...(typeof reported.battery === 'number' ? { batteryPercent: reported.battery } : {}),
    ...(dev.lastSeenAt ? { lastSeenAt: dev.lastSeenAt.toISOString() } : {}),
    online: dev.connectionId !== null,
    ...(reported.firmware || dev.info.firmware ? { firmwareVersion: reported.firmware ?? dev.info.firmware } : {}),
    ...(typeof reported.rssi === 'number' ? { wifiRssi: reported.rssi } : {}),
  }
}

export type ScreenDeps = {
  db: Database
  storage: ObjectStore
  images: ConversionPool
  renderer: ScreenRenderer
  link: DeviceLink
  baseUrl: string
  authSecret: string
  settings: ScreenSettings
  clock: () => Date
  log?: { warn: (o: object, m?: string) => void; error: (o: object, m?: string) => void }
}

function screenView(s: ScreenRow) {
  return {
    id: s.id,
    name: s.name,
    template: s.template,
    builtin: s.builtin,
    css: s.css,
    variables: s.variables,
    timeZone: s.timeZone,
    renderer: s.renderer,
    source: s.sourceUrl ? { url: s.sourceUrl, everySeconds: s.sourceEverySeconds ?? 0, headerNames: s.sourceHeaderNames } : null,
    allowPrivate: s.allowPrivate,
    userId: s.userId,
    organizationId: s.organizationId,
    dataAt: s.dataAt?.toISOString() ?? null,
    renderedAt: s.renderedAt?.toISOString() ?? null,
    lastError: s.lastError ?? null,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  }
}

export function createScreenService(deps: ScreenDeps) {
  const { db, settings } = deps

  async function isAdmin(userId: string) {
    return rolesOf((await findUserById(db, userId))?.role ?? null).includes('admin')
  }

  function checkTimeZone(timeZone: string | undefined) {
    if (timeZone === undefined) return
    try {
      new Intl.DateTimeFormat('en', { timeZone })
    } catch {
      throw appError('VALIDATION_ERROR', `timeZone: "${timeZone}" is not an IANA time zone`)
    }
  }

  /** The stored form of a source: its URL checked, its period floored, its headers sealed. */
  function sourceColumns(source: SourceInput | null | undefined, now: Date) {
    if (source === undefined) return {}
    if (source === null) return { sourceUrl: null, sourceEverySeconds: null, sourceHeaders: null, sourceHeaderNames: [], nextFetchAt: null }
    let url: URL
    try {
      url = new URL(source.url)
    } catch {
      throw appError('VALIDATION_ERROR', 'source.url: not a URL')
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw appError('VALIDATION_ERROR', 'source.url: http or https only')
    if (source.everySeconds < settings.minPollSeconds)
      throw appError('VALIDATION_ERROR', `source.everySeconds: at least ${settings.minPollSeconds} (SCREEN_MIN_POLL_SECONDS)`)
    const headers = source.headers ?? {}
    return {
      sourceUrl: url.href,
      sourceEverySeconds: source.everySeconds,
      sourceHeaders: Object.keys(headers).length ? sealHeaders(deps.authSecret, headers) : null,
      sourceHeaderNames: Object.keys(headers),
      // Fetched at once: a new URL's data is wanted now, not a period later.
      nextFetchAt: now,
    }
  }

  const chromiumMissing = () =>
    `Chromium is not installed on this server (no ${deps.renderer.chromiumPath}); use "takumi", or install Chromium and set CHROMIUM_PATH`

  /** Chromium asked for on a server without it: refused when the screen is saved or drafted, not at its first render. */
  function checkRenderer(renderer: Renderer | undefined) {
    if (renderer === 'chromium' && !deps.renderer.chromiumAvailable())
      throw appError('SCREEN_RENDERER_UNAVAILABLE', `renderer: ${chromiumMissing()}`)
  }

  async function checkPrivate(userId: string, allowPrivate: boolean | undefined) {
    if (allowPrivate && !(await isAdmin(userId)))
      throw appError('FORBIDDEN', 'allowPrivate: only an admin may let a screen fetch loopback, link-local or private addresses')
  }

  // ---- rendering -----------------------------------------------------------------------------

  function jobFor(s: ScreenRow, profile: DisplayProfile, device: ScreenDeviceContext | undefined): RenderJob & { renderer: Renderer } {
    return {
      renderer: s.renderer,
      ...(s.template ? { template: s.template } : {}),
      ...(s.builtin ? { builtin: s.builtin } : {}),
      ...(s.css ? { css: s.css } : {}),
      variables: s.variables,
      data: s.data ?? null,
      now: deps.clock().toISOString(),
      timeZone: s.timeZone,
      ...(device ? { device } : {}),
      width: profile.width,
      height: profile.height,
    }
  }

  /** The screen drawn at a profile's size: the PNG, or a ScreenFailure (recorded on the screen). */
  async function draw(s: ScreenRow, profile: DisplayProfile, device: ScreenDeviceContext | undefined): Promise<Buffer> {
    const result = await deps.renderer.render(jobFor(s, profile, device))
    if (!result.ok) {
      // Busy or still waiting for its source: not the screen's fault, and a source's own error stays on the record.
      if (result.code !== 'SCREEN_BUSY' && result.code !== 'SCREEN_NO_DATA')
        await setScreenError(db, s.id, { code: result.code, message: result.message, at: deps.clock().toISOString() })
      throw failure(result.code, result.message)
    }
    return result.png
  }

  /** A drawing converted for the panel, as the preview answers it (the PNG of its inks). */
  async function asPreview(ownerId: string, png: Buffer, profile: DisplayProfile) {
    const variants = await deps.images.convert(ownerId, png, profile)
    const v = previewVariant(variants, profile)
    if (!v) throw failure('SCREEN_RENDER_FAILED', 'the picture could not be converted for this display')
    return { body: v.data, contentType: v.contentType }
  }

  const renderKey = (s: ScreenRow, dev: DeviceRow) => `${profileKey(dev.display as DisplayProfile)}${readsDevice(s) ? `:${dev.id}` : ''}`

  async function stored(imageId: string): Promise<StoredImage | undefined> {
    const image = await findImage(db, imageId)
    return image ? { image, variants: await findVariants(db, image.id) } : undefined
  }

  /**
   * The screen's picture for a frame, rendered now and stored when its bytes changed: `changed`
   * says whether frames showing the last one must be sent this one.
   */
  async function renderFor(s: ScreenRow, dev: DeviceRow): Promise<{ stored: StoredImage; changed: boolean }> {
    const profile = dev.display as DisplayProfile
    const key = renderKey(s, dev)
    const png = await draw(s, profile, deviceContext(dev))
    const pngSha = sha256(png)
    const prev = await findRender(db, s.id, key)
    const prevStored = prev ? await stored(prev.imageId) : undefined
    const now = deps.clock()
    // The same drawing converts to the same bytes: nothing to convert, store or send.
    if (prev && prevStored && prev.pngSha256 === pngSha) return { stored: prevStored, changed: false }
    const variants = await deps.images.convert(s.userId, png, profile)
    const main = variants.find((v) => v.format === mainVariant(profile)) ?? variants[0]
    const mainSha = main ? sha256(main.data) : pngSha
    if (prev && prevStored && prev.sha256 === mainSha) {
      // A change the panel cannot show (below its inks' resolution): remembered, not sent.
      await saveRender(db, { ...prev, pngSha256: pngSha, renderedAt: now })
      return { stored: prevStored, changed: false }
    }
    const image = await storeImage(
      { db, storage: deps.storage, images: deps.images },
      { userId: s.userId, deviceId: dev.id, source: 'screen', original: png, profile, converted: variants },
    )
    await saveRender(db, { screenId: s.id, key, imageId: image.image.id, pngSha256: pngSha, sha256: mainSha, renderedAt: now })
    return { stored: image, changed: true }
  }

  /**
   * Draws the screen again for every frame showing it and sends each frame whose picture changed,
   * MQTT frames through the durable downlink at once, polling frames at their next poll (their
   * desired image is what the poll answers). One render per kind of frame.
   */
  async function refresh(screenId: string): Promise<{ frames: number; sent: number }> {
    const s = await findScreen(db, screenId)
    if (!s) return { frames: 0, sent: 0 }
    const showing = await findDevicesShowing(db, s.id)
    const byKey = new Map<string, DeviceShowing[]>()
    for (const dev of showing) {
      const key = renderKey(s, dev)
      const list = byKey.get(key)
      if (list) list.push(dev)
      else byKey.set(key, [dev])
    }
    const sends: ImageSend[] = []
    let failed: unknown
    for (const devices of byKey.values()) {
      try {
        const { stored: image, changed } = await renderFor(s, devices[0]!)
        if (!changed) continue
        for (const dev of devices)
          sends.push({ deviceId: dev.id, profile: dev.display as DisplayProfile, stored: image, by: { userId: s.userId } })
      } catch (err) {
        // The frames of this kind keep their last good picture; the error is on the screen.
        if (!(err instanceof ScreenFailure)) throw err
        failed = err
      }
    }
    if (sends.length) await sendImages({ db, link: deps.link, storage: deps.storage, baseUrl: deps.baseUrl }, sends, { bumpConfig: false })
    if (!failed && byKey.size) await setScreenError(db, s.id, null, deps.clock())
    return { frames: showing.length, sent: sends.length }
  }

  /** refresh, with its failures logged: it runs after a webhook or a fetch has answered. */
  function refreshLater(screenId: string): Promise<void> {
    return refresh(screenId).then(
      () => {},
      (err) => deps.log?.error({ err, screenId }, 'refreshing the frames showing a screen failed'),
    )
  }

  // ---- data sources ----------------------------------------------------------------------------

  async function fetchFor(s: ScreenRow): Promise<void> {
    // No URL but a period: a built-in screen drawn again as time passes.
    if (!s.sourceUrl) return void (await refresh(s.id))
    const headers = s.sourceHeaders ? openHeaders(deps.authSecret, s.sourceHeaders) : undefined
    try {
      const data = await fetchSource(s.sourceUrl, {
        timeoutMs: settings.fetchTimeoutMs,
        maxBytes: settings.fetchMaxBytes,
        as: s.builtin && builtinScreens[s.builtin]?.source === 'ics' ? 'text' : 'json',
        ...(headers ? { headers } : {}),
        allowAddress: addressPolicy(settings.allowPrivateSources || s.allowPrivate),
      })
      await setScreenData(db, s.id, data, deps.clock())
      // Drawn again even when the data is the same: what it shows may depend on the time (today on
      // a calendar). A drawing whose bytes did not change costs a render and sends nothing.
      await refresh(s.id)
    } catch (err) {
      if (!(err instanceof SourceError)) throw err
      await setScreenError(db, s.id, { code: err.code, message: err.message, at: deps.clock().toISOString() })
    }
  }

  /** One look for due data URLs: claimed (across instances), fetched a few at a time. */
  async function pollDue(limit = 20): Promise<number> {
    const due = await claimDueSources(db, deps.clock(), limit)
    await Promise.all(
      due.map((s) => fetchFor(s).catch((err) => deps.log?.error({ err, screenId: s.id }, 'fetching a screen source failed'))),
    )
    return due.length
  }

  // ---- the API ---------------------------------------------------------------------------------

  return {
    refresh,
    pollDue,

    async list(userId: string) {
      return (await listScreens(db, userId, 500)).map(screenView)
    },

    /**
     * The renderers a screen may choose here, asked at each call: Chromium's executable can be
     * installed or removed while the service runs, and saving checks it the same way.
     */
    renderers() {
      const chromium = deps.renderer.chromiumAvailable()
      return [
        { name: 'takumi' as const, available: true, reason: null },
        { name: 'chromium' as const, available: chromium, reason: chromium ? null : chromiumMissing() },
      ]
    },

    async create(userId: string, input: ScreenInput) {
      if (input.organizationId && !canManageWithRole(await findMemberRole(db, input.organizationId, userId)))
        throw appError('FORBIDDEN', 'Only owners and admins of the organization create its screens')
      checkTimeZone(input.timeZone)
      checkRenderer(input.renderer)
      await checkPrivate(userId, input.allowPrivate)
      if (!input.template === !input.builtin) throw appError('VALIDATION_ERROR', 'give either template or builtin')
      const builtin = input.builtin ? builtinScreens[input.builtin] : undefined
      if (input.builtin && !builtin) throw appError('VALIDATION_ERROR', `builtin: one of ${Object.keys(builtinScreens).join(', ')}`)
      if (builtin?.source !== undefined && builtin.source !== 'none' && !input.source)
        throw appError(
          'VALIDATION_ERROR',
          `source: the ${builtin.name} screen reads ${builtin.source === 'ics' ? 'an ICS feed' : 'a JSON URL'}`,
        )
      const token = newToken()
      const now = deps.clock()
      // A built-in screen without a source (a clock) is drawn again every minute; the claim of due sources does it.
      const redraw =
        builtin?.source === 'none' ? { sourceEverySeconds: Math.max(REDRAW_SECONDS, settings.minPollSeconds), nextFetchAt: now } : {}
      const row = await insertScreen(db, {
        id: randomUUID(),
        userId,
        organizationId: input.organizationId ?? null,
        name: input.name,
        template: input.template ?? null,
        builtin: input.builtin ?? null,
        css: input.css ?? null,
        variables: input.variables ?? {},
        timeZone: input.timeZone ?? 'UTC',
        renderer: input.renderer ?? 'takumi',
        tokenHash: sha256Text(token),
        allowPrivate: input.allowPrivate ?? false,
        ...redraw,
        ...sourceColumns(input.source, now),
      })
      return { ...screenView(row), token }
    },

    async get(userId: string, id: string) {
      return screenView(await requireScreen(db, id, userId, 'read'))
    },

    async patch(userId: string, id: string, changes: ScreenPatch) {
      const s = await requireScreen(db, id, userId, 'manage')
      checkTimeZone(changes.timeZone)
      checkRenderer(changes.renderer)
      await checkPrivate(userId, changes.allowPrivate)
      const { source, ...rest } = changes
      const row = (await updateScreen(db, s.id, { ...rest, ...sourceColumns(source, deps.clock()) })) ?? s
      // A new template or new variables: the frames showing the screen get what it draws now.
      void refreshLater(row.id)
      return screenView(row)
    },

    /**
     * A TRMNL recipe (a trmnlp project's files) as a screen: its markup, its settings' variables and
     * polling, and our stylesheet for the framework classes its markup uses.
     */
    async importRecipe(
      userId: string,
      input: { files: Record<string, string>; name?: string; organizationId?: string; allowPrivate?: boolean; renderer?: Renderer },
    ) {
      let recipe: ImportedRecipe
      // Loaded at the first import: liquidjs and yaml (about 1.2 MiB of heap) are needed by nothing
      // else in this process (screens render in a worker).
      const { importRecipe } = await import('./recipes/import.js')
      try {
        recipe = importRecipe(input.files)
      } catch (err) {
        if (err instanceof RecipeError) throw appError(err.code, err.message)
        throw err
      }
      const source = recipe.source
        ? { ...recipe.source, everySeconds: Math.max(settings.minPollSeconds, recipe.source.everySeconds) }
        : undefined
      return this.create(userId, {
        name: input.name ?? recipe.name,
        template: recipe.template,
        css: trmnlFrameworkCss,
        variables: recipe.variables,
        ...(source ? { source } : {}),
        ...(input.organizationId ? { organizationId: input.organizationId } : {}),
        ...(input.allowPrivate ? { allowPrivate: true } : {}),
        ...(input.renderer ? { renderer: input.renderer } : {}),
      })
    },

    /** A new webhook token, shown once; the old one stops working. */
    async rotateToken(userId: string, id: string) {
      const s = await requireScreen(db, id, userId, 'manage')
      const token = newToken()
      await updateScreen(db, s.id, { tokenHash: sha256Text(token) })
      return { token }
    },

    async remove(userId: string, id: string) {
      const s = await requireScreen(db, id, userId, 'manage')
      const using = await countPlaylistItemsUsing(db, s.id)
      if (using)
        throw appError('SCREEN_IN_USE', `The screen is an item of ${using} playlist${using === 1 ? '' : 's'}; remove it there first`)
      await deleteScreen(db, s.id)
    },

    /** The PNG the frame would show (its size, inks and dithering); a render failure is the answer's 4xx. */
    async preview(userId: string, id: string, deviceId: string | undefined) {
      const s = await requireScreen(db, id, userId, 'read')
      const dev = deviceId ? await accessibleDevice(db, deviceId, userId, 'read') : undefined
      const profile = dev ? (dev.display as DisplayProfile) : DEFAULT_DISPLAY
      const png = await draw(s, profile, dev ? deviceContext(dev) : undefined)
      const answer = await asPreview(s.userId, png, profile)
      if (s.lastError && !s.lastError.code.startsWith('SCREEN_SOURCE')) await setScreenError(db, s.id, null)
      return answer
    },

    /**
     * An unsaved draft drawn as the saved screen would be for the frame (the same render pool and
     * bounds, the screen's data, the panel's inks and dithering), to be looked at only: nothing is
     * stored, no frame is sent anything, and a failure is this answer's 4xx, not the screen's
     * lastError (the frames still show the saved screen). Without `id`, a screen not created yet.
     */
    async previewDraft(userId: string, id: string | undefined, draft: ScreenDraft) {
      const saved = id ? await requireScreen(db, id, userId, 'read') : undefined
      const dev = draft.deviceId ? await accessibleDevice(db, draft.deviceId, userId, 'read') : undefined
      checkTimeZone(draft.timeZone)
      const renderer = draft.renderer ?? saved?.renderer ?? 'takumi'
      checkRenderer(renderer)
      if (draft.template !== undefined && draft.builtin !== undefined) throw appError('VALIDATION_ERROR', 'give either template or builtin')
      if (draft.builtin !== undefined && !builtinScreens[draft.builtin])
        throw appError('VALIDATION_ERROR', `builtin: one of ${Object.keys(builtinScreens).join(', ')}`)
      // A draft's template replaces a built-in and the other way round, as they would once saved.
      const template = draft.template ?? (draft.builtin === undefined ? saved?.template : undefined)
      const builtin = draft.builtin ?? (draft.template === undefined ? saved?.builtin : undefined)
      if (!template && !builtin) throw appError('VALIDATION_ERROR', 'give either template or builtin')
      const css = draft.css ?? saved?.css
      const profile = dev ? (dev.display as DisplayProfile) : DEFAULT_DISPLAY
      const result = await deps.renderer.render({
        renderer,
        ...(template ? { template } : {}),
        ...(builtin ? { builtin } : {}),
        ...(css ? { css } : {}),
        variables: draft.variables ?? saved?.variables ?? {},
        data: saved?.data ?? null,
        now: deps.clock().toISOString(),
        timeZone: draft.timeZone ?? saved?.timeZone ?? 'UTC',
        ...(dev ? { device: deviceContext(dev) } : {}),
        width: profile.width,
        height: profile.height,
      })
      if (!result.ok) throw failure(result.code, result.message)
      return asPreview(saved?.userId ?? userId, result.png, profile)
    },

    /** Makes the screen the frame's current picture (and the frame one that follows the screen's changes). */
    async show(userId: string, id: string, deviceId: string) {
      const s = await requireScreen(db, id, userId, 'read')
      const dev = await accessibleDevice(db, deviceId, userId, 'manage')
      const { stored: image } = await renderFor(s, dev)
      const message = await deliverImage(
        { db, link: deps.link, storage: deps.storage, baseUrl: deps.baseUrl },
        dev.id,
        dev.display as DisplayProfile,
        image,
        { userId },
      )
      await setScreenError(db, s.id, null, deps.clock())
      return { deviceId: dev.id, imageId: image.image.id, sha256: message.sha256 }
    },

    /** The webhook: `Authorization: Bearer <token>`; the body becomes the template's data. */
    async pushData(id: string, authorization: string | undefined, data: unknown) {
      const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1]
      const s = token ? await findScreen(db, id) : undefined
      if (!s || !token || !matchesHash(token, s.tokenHash)) throw appError('UNAUTHORIZED', "The screen's id and token do not match")
      await setScreenData(db, s.id, data, deps.clock())
      const { frames, sent } = await refresh(s.id)
      const after = await findScreen(db, s.id)
      return { frames, sent, lastError: after?.lastError ?? null }
    },

    /** For a playlist turn: the screen's picture for the frame (rendered now, stored when it changed). */
    async imageFor(screenId: string, dev: DeviceRow): Promise<StoredImage> {
      const s = await findScreen(db, screenId)
      if (!s) throw appError('SCREEN_NOT_FOUND', 'the screen was deleted')
      return (await renderFor(s, dev)).stored
    },
  }
}

export type ScreenService = ReturnType<typeof createScreenService>
