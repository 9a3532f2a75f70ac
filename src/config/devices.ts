// Pairing: how long codes last, how often devices poll, and the MQTT URL they are handed.
import { z } from 'zod'
import { type Section, type Values, blankAsUnset, integer, optionalUrl, variable } from './variables.js'

export const devices = {
  title: 'Devices and pairing',
  variables: {
    devices: {
      codeTtl: variable('DEVICE_CODE_TTL', integer(30, 86400, 3600), 'seconds a pairing code stays valid'),
      pollInterval: variable('DEVICE_POLL_INTERVAL', integer(0, 60, 5), "seconds between a device's polls"),
      sweepInterval: variable(
        'DEVICE_SWEEP_INTERVAL',
        integer(1, undefined, 60),
        'seconds between sweeps that expire stale pairing records',
      ),
      autoApproveUserEmail: variable(
        'DEVICE_AUTO_APPROVE_USER_EMAIL',
        z.preprocess(
          blankAsUnset,
          z
            .string()
            .trim()
            .email()
            .optional()
            .transform((v) => v?.toLowerCase()),
        ),
        '**development only**: every new device is claimed at once for this existing account (for simulator fleets); refused when `NODE_ENV=production`',
      ),
      mqttPublicUrl: variable(
        'MQTT_PUBLIC_URL',
        optionalUrl,
        'MQTT URL handed to devices; by default `mqtts://<BASE_URL host>:MQTT_TLS_PORT` when the TLS listener is configured, else `mqtt://<BASE_URL host>:MQTT_PORT`, with the port the listener bound',
        { default: 'see meaning' },
      ),
    },
  },
} satisfies Section

/** Where devices reach this service's MQTT listener: TLS when it is configured, else plain TCP. */
type Listener = { baseUrl: string; mqttPort: number; tlsPort: number | undefined }

export function devicesSettings({ devices: { mqttPublicUrl, ...fields } }: Values<typeof devices.variables>, listener: Listener) {
  const host = new URL(listener.baseUrl).hostname
  return {
    devices: {
      ...fields,
      /** The MQTT URL handed to devices with their credentials: over TLS when its listener is configured. */
      mqttPublicUrl:
        mqttPublicUrl ?? (listener.tlsPort !== undefined ? `mqtts://${host}:${listener.tlsPort}` : `mqtt://${host}:${listener.mqttPort}`),
      /** Derived from the listener's port (and so follows the port it bound, when another was taken or 0 asked for one). */
      mqttPublicUrlIsDefault: !mqttPublicUrl,
    },
  }
}
