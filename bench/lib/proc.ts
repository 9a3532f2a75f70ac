// What the benchmarks read about a process: CPU seconds (user + system, from /proc/<pid>/stat)
// and resident memory (VmRSS from /proc/<pid>/status). Linux only.
import { readFileSync } from 'node:fs'

/** Clock ticks per second for /proc times (USER_HZ); 100 on every mainstream Linux. */
const HZ = 100

/** User + system CPU seconds a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name is in parentheses and may contain spaces: fields follow the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / HZ
}

/** Resident set size in bytes. */
function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const m = /^VmRSS:\s+(\d+) kB/m.exec(status)
  if (!m) throw new Error(`no VmRSS for ${pid}`)
  return Number(m[1]) * 1024
}

/** CPU seconds of this process (all threads), from process.cpuUsage. */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1e6
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Resident memory once it stops moving: V8 returns freed heap pages to the system only when its
 * memory reducer runs, 10–20 s after allocation calms down. So ours is collected and read every
 * 3 s until five readings in a row agree within 1% (45 s at most). Mosquitto is steady at once.
 */
export async function steadyRss(pid: number, ours?: { call(cmd: string): Promise<unknown> }): Promise<number> {
  const readings: number[] = []
  const deadline = Date.now() + 45_000
  for (;;) {
    await settle(ours ? 2000 : 500)
    if (ours) await ours.call('gc')
    readings.push(rssBytes(pid))
    const last = readings.slice(-3)
    const steady = last.length === 3 && Math.max(...last) - Math.min(...last) <= Math.min(...last) * 0.01
    if (steady || (!ours && readings.length >= 2) || Date.now() > deadline) return readings[readings.length - 1]!
  }
}
