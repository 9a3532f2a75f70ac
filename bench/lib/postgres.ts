// The local PostgreSQL server the cluster scenarios use: whether it answers, and the CPU its
// backends spend for one database (read from /proc, so only when the server runs on this machine).
import postgres from 'postgres'
import { cpuSeconds } from './proc.js'

export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export async function postgresReachable(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} })
  try {
    await sql`select 1`
    return true
  } catch {
    return false
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {})
  }
}

/** CPU seconds of the PostgreSQL backends serving `database` (readable when the server runs on this machine). */
export function pgCpu(admin: postgres.Sql, database: string) {
  const start = new Map<number, number>()
  const read = async () => {
    const rows = await admin<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`
    const out = new Map<number, number>()
    for (const r of rows) {
      try {
        out.set(r.pid, cpuSeconds(r.pid))
      } catch {
        // Not on this machine, or gone.
      }
    }
    return out
  }
  return {
    async begin() {
      for (const [pid, s] of await read()) start.set(pid, s)
    },
    async end(): Promise<number> {
      let total = 0
      for (const [pid, s] of await read()) total += s - (start.get(pid) ?? 0)
      return total
    },
  }
}

/**
 * Transactions committed and rows written in `database` so far (pg_stat_database). Backends report
 * these when idle, at most a second apart, or 10 s later: read them after a quiet spell (`settleMs`).
 */
export async function pgWrites(
  admin: postgres.Sql,
  database: string,
  settleMs = 11_000,
): Promise<{ commits: number; inserted: number; updated: number }> {
  await new Promise((r) => setTimeout(r, settleMs))
  const [row] = await admin<{ commits: string; inserted: string; updated: string }[]>`
    select xact_commit as commits, tup_inserted as inserted, tup_updated as updated from pg_stat_database where datname = ${database}`
  return { commits: Number(row?.commits ?? 0), inserted: Number(row?.inserted ?? 0), updated: Number(row?.updated ?? 0) }
}
