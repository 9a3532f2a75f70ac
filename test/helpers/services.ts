// Real services on the machine that some suites use: found through the environment, or probed
// on their standard loopback ports. A suite whose peer is missing is skipped with the reason.
import { connect } from 'node:net'

export function reachable(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host })
    const done = (ok: boolean) => {
      s.destroy()
      resolve(ok)
    }
    s.setTimeout(timeoutMs, () => done(false))
    s.once('connect', () => done(true))
    s.once('error', () => done(false))
  })
}

export async function redisUrl(): Promise<string | undefined> {
  if (process.env.REDIS_URL) return process.env.REDIS_URL
  return (await reachable(6379)) ? 'redis://127.0.0.1:6379' : undefined
}

/** PostgreSQL for suites that need one database shared by several instances (a cluster). */
export async function postgresUrl(): Promise<string | undefined> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL
  return (await reachable(5432)) ? 'postgres://postgres@127.0.0.1:5432/postgres' : undefined
}

export async function mosquittoUrl(): Promise<string | undefined> {
  return (await reachable(1883)) ? 'mqtt://127.0.0.1:1883' : undefined
}
