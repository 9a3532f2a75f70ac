// The pairing benchmark's peer: what a developer would otherwise assemble for device pairing —
// Better Auth's own device-authorization plugin (RFC 8628: /device/code, /device, /device/approve,
// /device/token) with the bearer plugin, on a plain Node HTTP server (better-auth/node), on the
// same embedded PGlite (our migrations create Better Auth's tables; the plugin's device_code table
// is created here). The parent drives it over IPC like bench/servers/ours.ts.
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { betterAuth } from 'better-auth'
import { drizzleAdapter } from 'better-auth/adapters/drizzle'
import { toNodeHandler } from 'better-auth/node'
import { bearer, deviceAuthorization } from 'better-auth/plugins'
import { sql } from 'drizzle-orm'
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { openDatabase } from '../../src/db/client.js'
import { account, session, user, verification } from '../../src/db/schema.js'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })
const deviceCode = pgTable('device_code', {
  id: text('id').primaryKey(),
  deviceCode: text('device_code').notNull().unique(),
  userCode: text('user_code').notNull().unique(),
  userId: text('user_id'),
  expiresAt: ts('expires_at').notNull(),
  status: text('status').notNull(),
  lastPolledAt: ts('last_polled_at'),
  pollingInterval: integer('polling_interval'),
  clientId: text('client_id'),
  scope: text('scope'),
})

const dataDir = process.env.DATA_DIR!
const port = Number(process.env.PORT)
const database = openDatabase({ dataDir })
await database.migrate()
await database.db.execute(
  sql.raw(`CREATE TABLE IF NOT EXISTS device_code (
    id text PRIMARY KEY, device_code text NOT NULL UNIQUE, user_code text NOT NULL UNIQUE, user_id text,
    expires_at timestamptz NOT NULL, status text NOT NULL, last_polled_at timestamptz, polling_interval integer,
    client_id text, scope text)`),
)

const baseURL = `http://127.0.0.1:${port}`
const auth = betterAuth({
  baseURL,
  secret: randomBytes(32).toString('hex'),
  telemetry: { enabled: false },
  database: drizzleAdapter(database.db, { provider: 'pg', schema: { user, session, account, verification, deviceCode } }),
  emailAndPassword: { enabled: true },
  // Our service runs with its limits raised for the benchmark; so does the peer.
  rateLimit: { enabled: false },
  logger: { level: 'error' },
  // Polling as fast as ours (DEVICE_POLL_INTERVAL=0 in the benchmark).
  plugins: [bearer(), deviceAuthorization({ interval: '0s', expiresIn: '30m' })],
})

const server = createServer(toNodeHandler(auth))
await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))

type Request = { id: number; cmd: string; [k: string]: unknown }
async function handle(req: Request): Promise<unknown> {
  switch (req.cmd) {
    case 'session': {
      const res = await auth.api.signUpEmail({
        body: { email: `peer-${process.pid}@example.com`, password: 'bench-password-123', name: 'Bench' },
      })
      return { token: res.token, userId: res.user.id }
    }
    case 'close':
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      await database.close()
      setImmediate(() => process.exit(0))
      return true
    default:
      throw new Error(`unknown command ${req.cmd}`)
  }
}
process.on('message', (req: Request) => {
  handle(req).then(
    (result) => process.send?.({ id: req.id, result }),
    (err: Error) => process.send?.({ id: req.id, error: err.stack ?? err.message }),
  )
})
process.on('disconnect', () => process.exit(0))
process.send?.({ ready: true, pid: process.pid, httpPort: port })
