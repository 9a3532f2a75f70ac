// What the device broker knows of each connection, shared by its hooks (device-broker.ts),
// presence.ts and uplink.ts; in a module of its own so that none of them imports another for it.
import type { DeviceOwner } from '../devices/presence-store.js'
import { downlinkKinds, type DisconnectReason, type DownlinkKind } from './contract.js'

export type ClientMeta = {
  kind: 'device' | 'app'
  /** The device id (devices) or user id (apps). */
  subject: string
  /** Unique per connection: a takeover's late disconnect must not be confused with the new session. */
  connectionId: string
  reason?: DisconnectReason
  /** Devices: the owner their events are attributed to, as read at authentication. */
  owner?: DeviceOwner
  /** Apps: the session they connected with; a revoked one ends the connection (revalidateApps). */
  sessionId?: string
  /**
   * Devices: whether the broker had a session for it at CONNACK, and the downlink kinds already
   * sent again on this connection (a bit per kind, see resentHas: a Set per connection cost ~230
   * bytes of every idle session).
   */
  session?: { resumed: boolean; resent: number; timer: NodeJS.Timeout | undefined; maxAcked: number }
}

const kindBit = (kind: DownlinkKind) => 1 << downlinkKinds.indexOf(kind)
/** Whether `kind` is among the `resent` bits. */
export const resentHas = (resent: number, kind: DownlinkKind) => (resent & kindBit(kind)) !== 0
/** `resent` with `kinds` added. */
export const resentWith = (resent: number, kinds: Iterable<DownlinkKind>) => {
  for (const k of kinds) resent |= kindBit(k)
  return resent
}
/** How many kinds `resent` holds. */
export const resentCount = (resent: number) => downlinkKinds.filter((k) => resentHas(resent, k)).length
