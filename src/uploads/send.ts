// Sends one of the user's uploads to a device: the images module converts it for the device's
// display exactly as it does a generated image, stores it, and publishes it to the device.
import type { Database } from '../db/client.js'
import { accessibleDevice } from '../devices/access.js'
import type { DeviceLink } from '../devices/sessions.js'
import { appError } from '../errors.js'
import { deliverImage } from '../images/delivery.js'
import type { ImageMessage } from '../mqtt/contract.js'
import { storeImage } from '../images/pipeline.js'
import type { ConversionPool } from '../images/conversion-pool.js'
import type { DisplayProfile } from '../images/profiles.js'
import type { ObjectStore } from '../storage/store.js'
import { ownsKey } from './service.js'

export type UploadSender = (
  userId: string,
  key: string,
  deviceId: string,
) => Promise<{ imageId: string; deviceId: string; image: ImageMessage }>

export function createUploadSender(deps: {
  db: Database
  storage: ObjectStore
  images: ConversionPool
  link: DeviceLink
  baseUrl: string
}): UploadSender {
  return async (userId, key, deviceId) => {
    // Showing an image changes what the device displays: the owner or an organization admin only.
    const dev = await accessibleDevice(deps.db, deviceId, userId, 'manage')
    const obj = ownsKey(userId, key) ? await deps.storage.get(key).catch(() => null) : null
    if (!obj) throw appError('NOT_FOUND', 'No such upload of yours')
    const profile = dev.display as DisplayProfile
    const stored = await storeImage(
      { db: deps.db, storage: deps.storage, images: deps.images },
      { userId, deviceId: dev.id, source: 'upload', original: obj.body, profile },
    )
    const image = await deliverImage(
      { db: deps.db, link: deps.link, storage: deps.storage, baseUrl: deps.baseUrl },
      dev.id,
      profile,
      stored,
      { userId },
    )
    return { imageId: stored.image.id, deviceId: dev.id, image }
  }
}
