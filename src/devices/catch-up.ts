// What a device gets again when it connects and the broker has no session for it (its first
// connect, or the embedded broker lost its sessions in a restart): the commands it has not
// acknowledged and the image it should be showing. QoS 1 is at-least-once anyway, so devices
// already skip what they have seen (by commandId and imageId); this turns "delivered while the
// broker remembered the session" into "delivered until acknowledged or shown".
import type { Database } from '../db/client.js'
import { findImage, findVariants } from '../images/repository.js'
import { imageMessage } from '../images/delivery.js'
import type { ObjectStore } from '../storage/store.js'
import { batched } from '../../broker/batching.js'
import { catchUpStates, findDevice, listUnackedCommands, type CatchUpState } from './repository.js'
import type { DeviceLink } from './sessions.js'

/** Commands older than this are not worth repeating (identify an hour later means nothing). */
export const CATCH_UP_WINDOW_MS = 60 * 60 * 1000
const MAX_COMMANDS = 20

export type CatchUpKind = 'cmd' | 'image'

export function createCatchUp(deps: { db: Database; link: DeviceLink; storage: ObjectStore; baseUrl: string; log: { warn: (o: object, m: string) => void } }) {
  // A fleet reconnecting after a restart opens thousands of new sessions at once, and nearly all
  // of them have nothing to catch up: one query per batch of devices says which do.
  const states = batched<string, CatchUpState | undefined>(
    async (ids) => {
      const found = new Map((await catchUpStates(deps.db, ids, new Date(Date.now() - CATCH_UP_WINDOW_MS))).map((s) => [s.id, s]))
      return ids.map((id) => found.get(id))
    },
    { concurrency: 1, maxBatchSize: 500 },
  )

  async function resend(deviceId: string, kind: CatchUpKind): Promise<number> {
    const state = await states.load(deviceId)
    if (!state?.live) return 0
    if (kind === 'cmd') {
      if (!state.hasCommands) return 0
      const commands = await listUnackedCommands(deps.db, deviceId, new Date(Date.now() - CATCH_UP_WINDOW_MS), MAX_COMMANDS)
      for (const c of commands) await deps.link.publish(deviceId, 'cmd', { commandId: c.id, command: c.command, args: c.args, issuedAt: c.createdAt.toISOString() })
      return commands.length
    }
    if (!state.pendingImageId) return 0
    const [dev, image] = await Promise.all([findDevice(deps.db, deviceId), findImage(deps.db, state.pendingImageId)])
    if (!dev || !image) return 0
    const message = await imageMessage(deps, dev.display, { image, variants: await findVariants(deps.db, image.id) })
    await deps.link.publish(deviceId, 'image', message)
    return 1
  }

  return (deviceId: string, kind: CatchUpKind) => {
    resend(deviceId, kind).catch((err) => deps.log.warn({ err, deviceId, kind }, 'catch-up after a new session failed'))
  }
}
