// What the device broker knows of each connection, shared by its hooks (device-broker.ts),
// presence.ts and uplink.ts; in a module of its own so that none of them imports another for it.
import type { DeviceOwner } from './credentials.js'
import type { DisconnectReason, DownlinkKind } from './contract.js'

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
  /** Devices: whether the broker had a session for it at CONNACK, and the downlink kinds already sent again on this connection. */
  session?: { resumed: boolean; resent: Set<DownlinkKind>; timer?: NodeJS.Timeout; maxAcked: number }
}
