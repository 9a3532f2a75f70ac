// What devices report: how often they are expected to, and how much of their log is kept.
import { type Section, integer, variable } from './variables.js'

export const deviceLogs = {
  title: 'Device status and logs',
  intro: 'See [device-logs.md](device-logs.md).',
  variables: {
    health: {
      defaultIntervalSeconds: variable(
        'DEVICE_REPORT_INTERVAL',
        integer(1, 7 * 86_400, 300),
        'seconds between status reports assumed for a device that does not say (`interval` in up/status); silent after three',
      ),
    },
    deviceLogs: {
      maxEntries: variable('LOG_MAX_ENTRIES', integer(1, 1_000_000, 1000), 'device log entries kept per device (the oldest go first)'),
      maxAgeDays: variable('LOG_MAX_AGE_DAYS', integer(1, 3650, 7), 'days a device log entry is kept'),
      ratePerMinute: variable(
        'LOG_RATE_PER_MINUTE',
        integer(1, 100_000, 120),
        'device log entries accepted per device per minute, with bursts up to `LOG_BURST`; the rest are counted, not stored',
      ),
      burst: variable('LOG_BURST', integer(1, 100_000, 300), 'the burst of device log entries accepted above `LOG_RATE_PER_MINUTE`'),
    },
  },
} satisfies Section
