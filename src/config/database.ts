// The database (PGlite in DATA_DIR, or PostgreSQL) and the optional Redis beside it.
import { z } from 'zod'
import { type Section, optionalUrl, variable } from './variables.js'

export const database = {
  title: 'Database and Redis',
  variables: {
    databaseUrl: variable('DATABASE_URL', optionalUrl, 'PostgreSQL URL; without it PGlite in `DATA_DIR/pglite`'),
    pgliteSharedBuffers: variable(
      'PGLITE_SHARED_BUFFERS',
      // PGlite's own default is 128MB.
      z
        .string()
        .regex(/^[1-9]\d*(kB|MB|GB)$/, 'PGLITE_SHARED_BUFFERS is a size such as 32MB')
        .default('32MB'),
      "The embedded database's page cache (PostgreSQL `shared_buffers`; PGlite's own default is 128MB, which costs about 120 MiB more resident memory). A new data folder is created (initdb) in a short-lived child process, so the service never holds initdb's 750 MiB",
      { values: 'a size: `kB`, `MB` or `GB`' },
    ),
    redisUrl: variable('REDIS_URL', optionalUrl, "Redis URL: sessions' secondary storage, rate-limit counters, pairing attempt counters"),
    redisPrefix: variable(
      'REDIS_PREFIX',
      // Also the start of the broker's pub/sub topics, where + and # would be wildcards.
      z
        .string()
        .regex(/^[^+#]*$/, 'REDIS_PREFIX may not contain + or #')
        .default('dps:'),
      "prefix of every Redis key and of the broker's pub/sub channels (deployments sharing one Redis stay apart). Instances from before 2026-11-24 used unprefixed channels: upgrade a cluster by restarting every instance together",
      { values: 'text without `+` or `#`' },
    ),
  },
} satisfies Section
