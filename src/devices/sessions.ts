// How the device module reaches devices over MQTT: publish to a device's topics and end its
// live session. The embedded broker implements it (src/mqtt/device-broker.ts); in external-broker
// mode an MQTT client does.
import type { DownlinkKind } from '../mqtt/contract.js'

export type DeviceLink = {
  /** Publishes `payload` as JSON with QoS 1 to devices/{id}/{kind}. */
  publish(deviceId: string, kind: DownlinkKind, payload: object, opts?: { retain?: boolean }): Promise<void>
  /** Closes the device's live connection, if any; resolves true when one was closed. */
  kick(deviceId: string, reason?: string): Promise<boolean>
}
