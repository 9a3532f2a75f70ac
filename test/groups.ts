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
  // Each long set of files shares its process with a short one (paired from the two ends of the
  // list by their times in a full run): a process costs about 6 s of CPU to import the app and
  // 2.5 s more for its first app start, paid 29 times a pass with one group per set, 15 times now.
  'session-race+mqtt-fuzz': { backing: true, files: ['auth/revocation-race-session.test.ts', 'fuzz/mqtt.test.ts'] },
  // PGlite is PostgreSQL itself (the same parser, types and constraints): what the fuzz checks,
  // that no input gets a 5xx or an error without {message, code}, is decided before the database
  // or by PostgreSQL's own rules, not by the driver or by Redis. The README's commands run on the
  // embedded defaults, as its quick start says.
  'fuzz-http': {
    backing: false,
    files: ['fuzz/http.test.ts', 'fuzz/surfaces.test.ts', 'fuzz/trmnl.test.ts', 'docs/readme.test.ts', 'docs/configuration.test.ts'],
  },
  'broker-a+restart-kill': {
    backing: true,
    files: [
      'broker/app-access.test.ts',
      'broker/app-revalidate.test.ts',
      'broker/auth.test.ts',
      'broker/acl-matrix.test.ts',
      'broker/connack-first.test.ts',
      'broker/delivery.test.ts',
      'broker/multi-subscribe.test.ts',
      'broker/ordering.test.ts',
      'broker/smoke.test.ts',
      'broker/device-wildcard.test.ts',
      'downlink/restart-kill.test.ts',
    ],
  },
  'broker-c+outbox': {
    backing: true,
    files: [
      'broker/cluster-errors.test.ts',
      'broker/cluster.test.ts',
      'broker/cluster-revalidate.test.ts',
      'broker/node-loss.test.ts',
      'broker/presence-store.test.ts',
      'broker/external.test.ts',
      'broker/rabbitmq.test.ts',
      'cluster/membership.test.ts',
      'schedules/cluster.test.ts',
      'downlink/outbox.test.ts',
      'downlink/superseded-backlog.test.ts',
      'downlink/redis-restart.test.ts',
    ],
  },
  'generation-runner+devices-a': {
    backing: true,
    files: ['generation/runner.test.ts', 'devices/pairing.test.ts', 'devices/bad-input.test.ts', 'devices/dither.test.ts'],
  },
  'admin-race+sim-fleet': { backing: true, files: ['auth/revocation-race-admin.test.ts', 'device-sim/fleet.test.ts'] },
  'broker-b+auth-c': {
    backing: true,
    files: [
      'broker/websocket.test.ts',
      'broker/tls-and-queue.test.ts',
      'broker/limits.test.ts',
      'broker/shutdown.test.ts',
      'broker/fleet.test.ts',
      'auth/multi-session.test.ts',
      'auth/organization.test.ts',
      'auth/passkey.test.ts',
    ],
  },
  // The CLI's arguments, state file and exit codes are the simulator's own; its pairing runs on
  // both backings in `sim+auth-a`. The OpenAPI document and the docs page are built from the
  // routes alone. The web console is a client of the API, whose behaviour on either backing the
  // API's own files check. The local model's drawing is a function of its input alone. The
  // migration lock test uses the machine's PostgreSQL on either. The full-disk test fills a
  // DATA_DIR of its own and runs the embedded database there on either. How a body over the limit
  // is answered, and which routes a configuration has, are decided before the database.
  'sim-cli+static+unit': {
    backing: false,
    files: [
      'web/console.test.ts',
      'web/stored-text.test.ts',
      'web/not-built.test.ts',
      'device-sim/cli.test.ts',
      'openapi/document.test.ts',
      'openapi/docs-page.test.ts',
      'suite.test.ts',
      'config.test.ts',
      'db/migrate-lock.test.ts',
      'images/convert.test.ts',
      'images/dither.test.ts',
      'images/encoders.test.ts',
      'images/palettes.test.ts',
      'images/conversion-pool.test.ts',
      'generation/local-image.test.ts',
      'generation/providers/bfl.test.ts',
      'generation/providers/config.test.ts',
      'generation/providers/fal.test.ts',
      'generation/providers/openai.test.ts',
      'generation/providers/replicate.test.ts',
      'http/drain.test.ts',
      'http/typebox.test.ts',
      'http/schema-compilers.test.ts',
      'http/error-codes.test.ts',
      'notifications/presence-digest.test.ts',
      'notifications/push-service.test.ts',
      'broker/acl.test.ts',
      'broker/aedes-internals.test.ts',
      'broker/patches.test.ts',
      'broker/batching.test.ts',
      'broker/packet-guard.test.ts',
      'broker/server-limits.test.ts',
      'broker/retained.test.ts',
      'broker/standalone.test.ts',
      'broker/paho-interop.test.ts',
      'schedules/plan.test.ts',
      'bench/report.test.ts',
      'bench/baseline.test.ts',
      'prompts/full-disk.test.ts',
      'http/body-limit.test.ts',
      'http/unconfigured-routes.test.ts',
    ],
  },
  'presence+auth-d': {
    backing: true,
    files: [
      'broker/presence.test.ts',
      'auth/route-auth.test.ts',
      'auth/social-and-hashing.test.ts',
      'auth/session-cache.test.ts',
      'schedules/schedule.test.ts',
      'schedules/prompt-items.test.ts',
      'schedules/leases.test.ts',
      'schedules/crash.test.ts',
    ],
  },
  'auth-b+restart-term': {
    backing: true,
    files: [
      'auth/bad-input.test.ts',
      'auth/email-login.test.ts',
      'auth/input-rules.test.ts',
      'auth/get-session.test.ts',
      'health/alerts.test.ts',
      'firmware/failures.test.ts',
      'firmware/crash.test.ts',
      'firmware/uplink-ack.test.ts',
      'downlink/restart-term.test.ts',
      'downlink/restart-accounts.test.ts',
    ],
  },
  'devices-b+password-race': {
    backing: true,
    files: [
      'devices/access.test.ts',
      'devices/lifecycle.test.ts',
      'devices/transports.test.ts',
      'db/device-foreign-keys.test.ts',
      'db/pglite-init.test.ts',
      'openapi/client.test.ts',
      'openapi/examples.test.ts',
      'firmware/rollout.test.ts',
      'firmware/trust.test.ts',
      'auth/revocation-race-password.test.ts',
    ],
  },
  'web-a+generation': {
    backing: true,
    files: [
      'server.test.ts',
      'http/origins.test.ts',
      'invitations/invitation-mail.test.ts',
      'mail/smtp.test.ts',
      'generation/flow.test.ts',
      'generation/prompts.test.ts',
      'device-logs/logs.test.ts',
      'trmnl/protocol.test.ts',
      'trmnl/live-state.test.ts',
      'trmnl/untrusted.test.ts',
      'trmnl/firmware.test.ts',
    ],
  },
  'web-b+generation-jobs': {
    backing: true,
    files: [
      'notifications/push.test.ts',
      'uploads/upload.test.ts',
      'images/conversion-load.test.ts',
      'storage/store.test.ts',
      'http/no-5xx.test.ts',
      'generation/jobs.test.ts',
    ],
  },
  'sim+auth-a': {
    backing: true,
    files: [
      'device-sim/behaviour.test.ts',
      'device-sim/credentials.test.ts',
      'device-sim/end-to-end.test.ts',
      'device-sim/server-restart.test.ts',
      'device-sim/trmnl.test.ts',
      'schedules/sim-sleep.test.ts',
      'auth/account.test.ts',
      'auth/admin.test.ts',
      'auth/api-keys.test.ts',
    ],
  },
  // Better Auth keeps its in-memory rate-limit buckets in one module-global Map, shared by every
  // app of a process: the strict limits this file sets would meet the sign-ins of other files.
  'rate-limit': { backing: true, files: ['auth/rate-limit.test.ts'] },
} satisfies Record<string, Group>

export type GroupName = keyof typeof groups

/** test/groups/NN-name.test.ts: the entry file of a group, numbered by its place in the list. */
export const entryFile = (name: GroupName) => `${String(Object.keys(groups).indexOf(name) + 1).padStart(2, '0')}-${name}.test.ts`
