// How the device module reaches devices over MQTT: publish to a device's topics and end its
// live session. The embedded broker implements it (src/mqtt/device-broker.ts); in external-broker
// mode an MQTT client does.
import type { Executor } from '../db/client.js'
import type { DownlinkKind } from '../mqtt/contract.js'

export type DeviceLink = {
  /** Publishes `payload` as JSON with QoS 1 to devices/{id}/{kind}. */
  publish(deviceId: string, kind: DownlinkKind, payload: object, opts?: { retain?: boolean }): Promise<void>
  /** Closes the device's live connection, if any; resolves true when one was closed. */
  kick(deviceId: string, reason?: string): Promise<boolean>
  /**
   * What apps watching the device see live, for a device whose presence the service decides
   * itself (a polling TRMNL frame): the retained devices/{id}/state and the event on
   * devices/{id}/events, as the broker publishes them for an MQTT device's connects.
   */
  announce?(deviceId: string, state: PresenceState, event?: object): Promise<void>
  /**
   * The device's secret was issued, in clear only here: a broker that keeps its own accounts
   * (RabbitMQ's internal users) takes it. Never throws: the device can still connect without it.
   */
  credentialsIssued?(deviceId: string, secret: string): Promise<void>
  /** The device's secret was revoked (before `kick`): a broker's own account for it goes. */
  credentialsRevoked?(deviceId: string): Promise<void>
  /**
   * Devices gone with their account (the database deleted them, no revocation ran): a broker's
   * own accounts for them go, and their connections close.
   */
  devicesDeleted?(deviceIds: readonly string[]): Promise<void>
}

/** The retained body of devices/{id}/state. */
export type PresenceState = { online: boolean; since: string; reason?: string }

/** A message stored in the caller's transaction: `send` hands it to the device once that transaction has committed. */
export type StagedMessage = { send(): Promise<void> }

/**
 * A DeviceLink whose messages are stored before they are sent (the durable downlink): `stage`
 * stores one in the caller's transaction, so it is queued exactly when what it announces is
 * (a prompt and its message, both or neither, whatever crash comes between).
 */
export type DurableLink = DeviceLink & {
  stage(tx: Executor, deviceId: string, kind: DownlinkKind, payload: object, opts?: { retain?: boolean }): Promise<StagedMessage>
  /** `stage` for many messages at once, in shared statements: one StagedMessage for all of them. */
  stageAll(
    tx: Executor,
    messages: ReadonlyArray<{ deviceId: string; kind: DownlinkKind; payload: object; retain?: boolean }>,
  ): Promise<StagedMessage>
}
