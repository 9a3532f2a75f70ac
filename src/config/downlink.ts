// The durable downlink's bounds per device (src/downlink).
import { type Section, integer, variable } from './variables.js'

const milliseconds = (seconds: number) => seconds * 1000

export const downlink = {
  title: 'Downlink',
  variables: {
    downlink: {
      maxPerDevice: variable(
        'DOWNLINK_MAX_PER_DEVICE',
        integer(1, 100_000, 1000),
        'pending messages kept per device in the outbox; older ones are dropped with a `device.downlink_dropped` event',
      ),
      maxAgeMs: variable(
        'DOWNLINK_MAX_AGE',
        integer(60, undefined, 7 * 86400).transform(milliseconds),
        'seconds a pending message waits for its device before it is dropped (with the same event)',
      ),
      keepDeliveredMs: variable(
        'DOWNLINK_KEEP_DELIVERED',
        integer(0, undefined, 3600).transform(milliseconds),
        'seconds delivered messages stay listed in `GET /api/device/:id/downlink`',
      ),
    },
  },
} satisfies Section
