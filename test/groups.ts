// Which test files share a process (see test/helpers/group.ts), in the order the groups start:
// the longest first (by their times in a full run), so that the four parallel jobs finish
// together instead of waiting on one long group started last. `backing` says whether a group's outcome depends on the database or
// Redis: only those groups run a second time, against PostgreSQL and Redis, in .ci/run.
// Every test file is in exactly one group (test/suite.test.ts checks it); each group has an entry
// file test/groups/NN-name.test.ts, NN its place in this list (tap starts files in name order).

type Group = {
  /** false: nothing in these files reads or writes the database or Redis, or what they check is the same on either (said why). */
  backing: boolean
  files: readonly string[]
}

export const groups = {
  'race-session': { backing: true, files: ['auth/revocation-race-session.test.ts'] },
  // PGlite is PostgreSQL itself (the same parser, types and constraints): what the fuzz checks,
  // that no input gets a 5xx or an error without {message, code}, is decided before the database
  // or by PostgreSQL's own rules, not by the driver or by Redis.
  'fuzz-http': { backing: false, files: ['fuzz/http.test.ts'] },
  'broker-a': {
    backing: true,
    files: [
      'broker/app-access.test.ts',
      'broker/auth.test.ts',
      'broker/connack-first.test.ts',
      'broker/delivery.test.ts',
      'broker/multi-subscribe.test.ts',
      'broker/ordering.test.ts',
      'broker/smoke.test.ts',
    ],
  },
  'broker-c': {
    backing: true,
    files: [
      'broker/cluster-errors.test.ts',
      'broker/cluster.test.ts',
      'broker/node-loss.test.ts',
      'broker/presence-store.test.ts',
      'broker/external.test.ts',
      'cluster/membership.test.ts',
    ],
  },
  'generation-runner': { backing: true, files: ['generation/runner.test.ts'] },
  'race-admin': { backing: true, files: ['auth/revocation-race-admin.test.ts'] },
  'broker-b': {
    backing: true,
    files: [
      'broker/websocket.test.ts',
      'broker/tls-and-queue.test.ts',
      'broker/limits.test.ts',
      'broker/shutdown.test.ts',
      'broker/fleet.test.ts',
    ],
  },
  // The CLI's arguments, state file and exit codes are the simulator's own; its pairing runs on
  // both backings in `sim`.
  'sim-cli': { backing: false, files: ['device-sim/cli.test.ts'] },
  presence: { backing: true, files: ['broker/presence.test.ts'] },
  'auth-b': {
    backing: true,
    files: ['auth/bad-input.test.ts', 'auth/email-login.test.ts', 'auth/input-rules.test.ts', 'auth/get-session.test.ts'],
  },
  'devices-b': {
    backing: true,
    files: ['devices/access.test.ts', 'devices/lifecycle.test.ts', 'db/device-foreign-keys.test.ts', 'openapi/client.test.ts'],
  },
  'web-a': { backing: true, files: ['server.test.ts', 'http/origins.test.ts', 'invitations/invitation-mail.test.ts', 'mail/smtp.test.ts'] },
  'web-b': {
    backing: true,
    files: ['notifications/push.test.ts', 'uploads/upload.test.ts', 'storage/store.test.ts', 'http/no-5xx.test.ts'],
  },
  sim: {
    backing: true,
    files: [
      'device-sim/behaviour.test.ts',
      'device-sim/credentials.test.ts',
      'device-sim/end-to-end.test.ts',
      'device-sim/server-restart.test.ts',
    ],
  },
  'auth-a': { backing: true, files: ['auth/account.test.ts', 'auth/admin.test.ts', 'auth/api-keys.test.ts'] },
  'generation-jobs': { backing: true, files: ['generation/jobs.test.ts'] },
  generation: { backing: true, files: ['generation/flow.test.ts', 'generation/prompts.test.ts'] },
  'race-password': { backing: true, files: ['auth/revocation-race-password.test.ts'] },
  'restart-term': { backing: true, files: ['downlink/restart-term.test.ts'] },
  'auth-d': { backing: true, files: ['auth/route-auth.test.ts', 'auth/social-and-hashing.test.ts', 'auth/session-cache.test.ts'] },
  'auth-c': { backing: true, files: ['auth/multi-session.test.ts', 'auth/organization.test.ts', 'auth/passkey.test.ts'] },
  'sim-fleet': { backing: true, files: ['device-sim/fleet.test.ts'] },
  'devices-a': { backing: true, files: ['devices/pairing.test.ts', 'devices/bad-input.test.ts'] },
  outbox: { backing: true, files: ['downlink/outbox.test.ts'] },
  'restart-kill': { backing: true, files: ['downlink/restart-kill.test.ts'] },
  'fuzz-mqtt': { backing: true, files: ['fuzz/mqtt.test.ts'] },
  // Better Auth keeps its in-memory rate-limit buckets in one module-global Map, shared by every
  // app of a process: the strict limits this file sets would meet the sign-ins of other files.
  'rate-limit': { backing: true, files: ['auth/rate-limit.test.ts'] },
  // The OpenAPI document and the docs page are built from the routes alone.
  static: { backing: false, files: ['openapi/document.test.ts', 'openapi/docs-page.test.ts'] },
  unit: {
    backing: false,
    files: [
      'suite.test.ts',
      'config.test.ts',
      'images/convert.test.ts',
      'images/dither.test.ts',
      'images/encoders.test.ts',
      'images/queue.test.ts',
      'generation/providers/bfl.test.ts',
      'generation/providers/config.test.ts',
      'generation/providers/fal.test.ts',
      'generation/providers/openai.test.ts',
      'generation/providers/replicate.test.ts',
      'http/drain.test.ts',
      'http/typebox.test.ts',
      'http/error-codes.test.ts',
      'notifications/presence-digest.test.ts',
      'notifications/push-service.test.ts',
      'broker/acl.test.ts',
      'broker/aedes-internals.test.ts',
      'broker/batching.test.ts',
      'broker/packet-guard.test.ts',
      'broker/retained.test.ts',
      'broker/standalone.test.ts',
    ],
  },
} satisfies Record<string, Group>

export type GroupName = keyof typeof groups

/** test/groups/NN-name.test.ts: the entry file of a group, numbered by its place in the list. */
export const entryFile = (name: GroupName) => `${String(Object.keys(groups).indexOf(name) + 1).padStart(2, '0')}-${name}.test.ts`
