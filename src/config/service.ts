// The process itself: where it keeps its data, how it logs, which checklist applies.
import { resolve } from 'node:path'
import { z } from 'zod'
import { type Section, type Values, variable } from './variables.js'

export const service = {
  title: 'Service',
  variables: {
    nodeEnv: variable(
      'NODE_ENV',
      z.string().optional(),
      '`production` applies the production checklist at start ([deployment.md](deployment.md#production-checklist))',
    ),
    dataDir: variable(
      'DATA_DIR',
      z
        .string()
        .default('./data')
        .transform((dir) => resolve(dir)),
      'PGlite database, outbox, generated secrets (resolved against the working directory)',
    ),
    logLevel: variable(
      'LOG_LEVEL',
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      'how much the service logs',
    ),
    logFormat: variable(
      'LOG_FORMAT',
      z.enum(['pretty', 'json']).optional(),
      '`pretty`: one readable line per entry (pino-pretty); `json`: one JSON object per line, for journald and log collectors',
      { default: 'pretty on a terminal, else json' },
    ),
  },
} satisfies Section

export function serviceSettings({ nodeEnv: _, logFormat, ...fields }: Values<typeof service.variables>) {
  return {
    ...fields,
    /** Readable lines on a terminal, JSON anywhere else (a pipe, a file, journald), unless LOG_FORMAT says. */
    logPretty: logFormat ? logFormat === 'pretty' : Boolean(process.stdout.isTTY),
  }
}
