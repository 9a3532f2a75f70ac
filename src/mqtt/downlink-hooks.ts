// The seam between the MQTT transports (device-broker.ts, external.ts) and the durable downlink
// (src/downlink/outbox.ts): defined apart from start.ts, which wires both, so neither transport
// imports the module that imports it.
import type { ResendOptions } from '../downlink/outbox.js'

/** What the transport tells the durable downlink. */
export type DownlinkHooks = {
  /** The device acknowledged a numbered message; resolves with its kind, or undefined when there is no such message. */
  delivered(deviceId: string, seq: number): Promise<string | undefined>
  /** The device reported the config version it applies and the image it shows. */
  reported(deviceId: string, report: { configVersion?: number; shownImageId?: string | null }): Promise<void>
  /** The device can receive these kinds now: send what it lacks, except what the broker holds for it. */
  resend(deviceId: string, opts: ResendOptions): Promise<number>
  /** False when the device is known to have nothing to resend: the transport need not gather what it holds for one. */
  mayHavePending?(deviceId: string): boolean
  /** A resend will follow (true) or will not after all (false); see Outbox.expectResend. */
  expectResend(deviceId: string, expected: boolean): void
}
