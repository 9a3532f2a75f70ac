// Playlists' turns: how short one may be and how due turns are claimed across instances.
import { z } from 'zod'
import { type Section, type Values, integer, variable } from './variables.js'

export const schedules = {
  title: 'Schedules',
  intro: 'See [schedules.md](schedules.md).',
  variables: {
    schedule: {
      minSeconds: variable('SCHEDULE_MIN_SECONDS', integer(1, 86400, 60), 'the shortest time per playlist item; tests and demos lower it'),
      tickMs: variable(
        'SCHEDULE_TICK_MS',
        integer(10, 60_000, 1000),
        'the longest wait between two looks for due schedule turns (a turn falling due, or a plan saved here, is looked at sooner)',
      ),
      batch: variable(
        'SCHEDULE_BATCH',
        integer(1, 5000, 1000),
        'due turns claimed per statement; the rest wait for the next claim, by this or another instance',
      ),
      leaseMs: variable(
        'SCHEDULE_LEASE_MS',
        z.coerce.number().int().min(500).max(600_000).optional(),
        "how long a claim on due turns lasts unless renewed (every third of it while the batch is worked on): a crashed node's turns are taken over within it",
        { default: 'half of `SCHEDULE_MIN_SECONDS`, at most 30,000' },
      ),
    },
  },
} satisfies Section

export function scheduleSettings({ schedule }: Values<typeof schedules.variables>) {
  return {
    schedule: {
      ...schedule,
      // At most half the shortest turn, so a crashed node's turns are taken over before the next one falls due.
      leaseMs: schedule.leaseMs ?? Math.min(30_000, Math.max(1000, schedule.minSeconds * 500)),
    },
  }
}
