// Sends a converted image to a device: devices/{id}/image gets {imageId, url, format, width,
// height, bytes, sha256} (and the bytes inline when the profile asks and the file is small); the
// device's desired image changes, so it is out of sync until it reports showing it.
import type { Database } from '../db/client.js'
import { type DeviceRow, setDesiredImages, setDesiredState } from '../devices/repository.js'
import type { DeviceLink } from '../devices/sessions.js'
import type { ImageMessage } from '../mqtt/contract.js'
import { insertEvent, insertEvents } from '../events/repository.js'
import type { ObjectStore } from '../storage/store.js'
import { mainVariant } from './convert.js'
import type { DisplayProfile } from './profiles.js'
import { imageUrl, type StoredImage } from './pipeline.js'

/** Inline bytes only below this size: MQTT messages cross the cluster through Redis pub/sub. */
const INLINE_LIMIT = 64 * 1024

/** The devices/{id}/image message for a stored image on a display: its main variant's URL, size and digest. */
async function imageMessage(
  deps: { storage: ObjectStore; baseUrl: string },
  profile: DisplayProfile,
  stored: StoredImage,
): Promise<ImageMessage> {
  const wanted = mainVariant(profile)
  const v = stored.variants.find((x) => x.format === wanted) ?? stored.variants[0]
  const message: ImageMessage = v
    ? {
        imageId: stored.image.id,
        url: imageUrl(deps.baseUrl, stored.image.id, v.format),
        format: v.format,
        width: v.width,
        height: v.height,
        bytes: v.bytes,
        sha256: v.sha256,
        contentType: v.contentType,
      }
    : {
        imageId: stored.image.id,
        url: imageUrl(deps.baseUrl, stored.image.id, 'original'),
        format: 'original',
        width: stored.image.width,
        height: stored.image.height,
        bytes: stored.image.bytes,
        sha256: stored.image.sha256,
        contentType: stored.image.contentType,
      }
  if (profile.inline && v && v.bytes <= INLINE_LIMIT) {
    const obj = await deps.storage.get(v.key)
    if (obj) message.data = obj.body.toString('base64')
  }
  return message
}

export async function deliverImage(
  deps: { db: Database; link: DeviceLink; storage: ObjectStore; baseUrl: string },
  deviceId: string,
  profile: DisplayProfile,
  stored: StoredImage,
  by: { userId: string; jobId?: string | null; scheduled?: { playlistId: string; itemId: string } },
): Promise<ImageMessage> {
  const message = await imageMessage(deps, profile, stored)
  const dev = await setDesiredState(deps.db, deviceId, { imageId: stored.image.id })
  await insertEvent(deps.db, {
    type: 'device.image',
    deviceId,
    userId: by.userId,
    organizationId: dev?.organizationId,
    data: {
      imageId: stored.image.id,
      format: message.format,
      jobId: by.jobId ?? null,
      ...(by.scheduled ? { scheduled: by.scheduled } : {}),
    },
  })
  await deps.link.publish(deviceId, 'image', message)
  return message
}

export type ImageSend = {
  deviceId: string
  profile: DisplayProfile
  stored: StoredImage
  by: { userId: string; scheduled?: { playlistId: string; itemId: string } }
}

/**
 * deliverImage for many devices in a few statements (one update of the devices, one insert of the
 * events; the outbox batches the messages), each device's config version raised for the config
 * its caller publishes next (unless `bumpConfig` is false: a screen's new picture changes no config). Answers each device's row as updated (a device deleted meanwhile is
 * missing): what the scheduler sends when a crowd of frames turns at once.
 */
export async function sendImages(
  deps: { db: Database; link: DeviceLink; storage: ObjectStore; baseUrl: string },
  sends: readonly ImageSend[],
  opts: { bumpConfig?: boolean } = {},
): Promise<Map<string, DeviceRow>> {
  const messages = await Promise.all(sends.map((s) => imageMessage(deps, s.profile, s.stored)))
  const updated = await setDesiredImages(
    deps.db,
    sends.map((s) => ({ id: s.deviceId, imageId: s.stored.image.id })),
    opts,
  )
  const rows = new Map(updated.map((d) => [d.id, d]))
  const now = new Date()
  const live = sends.flatMap((s, i) => {
    const dev = rows.get(s.deviceId)
    return dev ? [{ s, dev, message: messages[i]! }] : []
  })
  await insertEvents(
    deps.db,
    live.map(({ s, dev, message }) => ({
      type: 'device.image',
      deviceId: s.deviceId,
      userId: s.by.userId,
      organizationId: dev.organizationId,
      data: { imageId: s.stored.image.id, format: message.format, jobId: null, ...(s.by.scheduled ? { scheduled: s.by.scheduled } : {}) },
      at: now,
    })),
  )
  await Promise.all(live.map(({ s, message }) => deps.link.publish(s.deviceId, 'image', message)))
  return rows
}
