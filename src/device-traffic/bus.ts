// Where the transports (the MQTT broker, an external broker, TRMNL's polls) meet the domains that
// answer them. The transports are built before the durable downlink and firmware, which need a
// transport to send through; so the transports are handed this bus, and the domains attach to it
// once they exist, instead of each side holding a reference to the other.
import type { DownlinkHooks } from '../mqtt/downlink-hooks.js'
import type { UplinkHooks } from '../mqtt/uplink.js'

type StatusReport = Parameters<NonNullable<UplinkHooks['status']>>[1]
type OtaReport = Parameters<NonNullable<UplinkHooks['ota']>>[1]

export type DeviceTraffic = {
  /** What the transports tell the durable downlink; until one is attached nothing is stored, nothing resent. */
  readonly downlink: DownlinkHooks
  /** A status report, handed to every listener in the order they attached, each awaited. */
  status(deviceId: string, report: StatusReport): Promise<void>
  /** Firmware update progress; false when no handler is attached or it matched no offer. */
  ota(deviceId: string, report: OtaReport): Promise<boolean>
  attachDownlink(hooks: DownlinkHooks): void
  onStatus(listener: (deviceId: string, report: StatusReport) => Promise<void>): void
  handleOta(handler: (deviceId: string, report: OtaReport) => Promise<boolean>): void
}

export function createDeviceTraffic(): DeviceTraffic {
  let downlink: DownlinkHooks | undefined
  let ota: ((deviceId: string, report: OtaReport) => Promise<boolean>) | undefined
  const statusListeners: Array<(deviceId: string, report: StatusReport) => Promise<void>> = []
  return {
    downlink: {
      delivered: async (id, seq) => downlink?.delivered(id, seq),
      reported: async (id, report) => downlink?.reported(id, report),
      resend: async (id, opts) => (downlink ? downlink.resend(id, opts) : 0),
      // Nothing is resent before a downlink is attached.
      mayHavePending: (id) => downlink?.mayHavePending?.(id) ?? false,
      expectResend: (id, expected) => downlink?.expectResend(id, expected),
    },
    async status(deviceId, report) {
      for (const listener of statusListeners) await listener(deviceId, report)
    },
    ota: async (deviceId, report) => (ota ? ota(deviceId, report) : false),
    attachDownlink(hooks) {
      if (downlink) throw new Error('a durable downlink is already attached')
      downlink = hooks
    },
    onStatus(listener) {
      statusListeners.push(listener)
    },
    handleOta(handler) {
      if (ota) throw new Error('a firmware progress handler is already attached')
      ota = handler
    },
  }
}
