// The suite needs no hand-made grouping: a few worker processes (test/groups/worker-N.test.ts)
// share the run's queue of test files and each takes the next one when its last is done, longest
// first by the times of earlier runs (test/helpers/queue.ts), so a new test file runs without
// being listed anywhere and the workers finish together whatever is added. Listed here are the
// exceptions only, each with its reason; test/suite.test.ts checks that each exists.

/**
 * Files whose outcome does not depend on the database or Redis: nothing in them reads or writes
 * either, or what they check is the same on both (said why). `.ci/run`'s second pass, against
 * PostgreSQL and Redis (DATABASE_URL set), skips them.
 */
export const embeddedOnly: readonly string[] = [
  // PGlite is PostgreSQL itself (the same parser, types and constraints): what the fuzz checks,
  // that no input gets a 5xx or an error without {message, code}, is decided before the database
  // or by PostgreSQL's own rules, not by the driver or by Redis. The README's commands run on the
  // embedded defaults, as its quick start says.
  'fuzz/http.test.ts',
  'fuzz/surfaces.test.ts',
  'fuzz/trmnl.test.ts',
  'docs/readme.test.ts',
  'docs/configuration.test.ts',
  // The web console is a client of the API, whose behaviour on either backing the API's own files
  // check.
  'web/console.test.ts',
  'web/stored-text.test.ts',
  'web/not-built.test.ts',
  'web/data-layer.test.ts',
  'device-traffic/bus.test.ts',
  // The CLI's arguments, state file and exit codes are the simulator's own; its pairing runs on
  // both backings in the other device-sim files.
  'device-sim/cli.test.ts',
  // The OpenAPI document and the docs page are built from the routes alone.
  'openapi/document.test.ts',
  'openapi/docs-page.test.ts',
  // The migration lock test uses the machine's PostgreSQL on either.
  'db/migrate-lock.test.ts',
  // The full-disk test fills a DATA_DIR of its own and runs the embedded database there on either.
  'prompts/full-disk.test.ts',
  // How a body over the limit is answered, and which routes a configuration has, are decided
  // before the database.
  'http/body-limit.test.ts',
  'http/unconfigured-routes.test.ts',
  // Unit files: nothing in them reads or writes the database or Redis (the local model's drawing
  // is a function of its input alone).
  'suite.test.ts',
  'config.test.ts',
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
  'http/discard-body.test.ts',
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
  'broker/listen-backlog.test.ts',
  'broker/retained.test.ts',
  'broker/standalone.test.ts',
  'broker/paho-interop.test.ts',
  // What it adds to broker/rabbitmq (which runs on both) is RabbitMQ's: a second node, its routing,
  // events, connection closes and failover; the service's side of it is the same on either, and
  // it costs about 50 s of RabbitMQ starts and stops.
  'broker/rabbitmq-cluster.test.ts',
  'schedules/plan.test.ts',
  // Domain rules decided from loaded rows, or over a repository stand-in typed by the real one:
  // no database is opened (the repositories they replace run in the domains' full-app files).
  'trmnl/display-rules.test.ts',
  'devices/pairing-rules.test.ts',
  'downlink/resend-rules.test.ts',
  'firmware/halt-rules.test.ts',
  'bench/report.test.ts',
  'bench/baseline.test.ts',
  // Screens' pure parts: the built-ins' templates and data, the recipe importer, the render pool
  // and the source fetcher's guards (against local servers) read or write no database.
  'screens/builtin-calendar.test.ts',
  'screens/builtin-clock.test.ts',
  'screens/builtin-frame-status.test.ts',
  'screens/builtin-weather.test.ts',
  'screens/fetch-source.test.ts',
  'screens/recipes-import.test.ts',
  'screens/render-pool.test.ts',
  // The console's Screens page is a client of /api/screens, which test/screens/ checks on both.
  'web/screens.test.ts',
  'web/screens-data.test.ts',
]

/**
 * Files that must not share a process, each run by test/groups/0-NAME.test.ts instead of a worker.
 * Better Auth keeps its in-memory rate-limit buckets in one module-global Map, shared by every
 * app of a process: the strict limits the rate-limit file sets would meet the sign-ins of other
 * files.
 */
export const ownProcess = {
  'rate-limit': 'auth/rate-limit.test.ts',
  // It watches the process's uncaughtException and waits for ioredis's first error reports: in a
  // worker after 90 other files (2026-11-28, clean-clone CI) they did not come within 10 s, alone
  // they come in 2.5 s; why the shared process delays them is not found yet.
  'cluster-errors': 'broker/cluster-errors.test.ts',
} as const

/** How many worker entry files test/groups/ holds: as many as tap runs at once (.taprc `jobs`). */
export const WORKERS = 4
