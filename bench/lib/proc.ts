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
export function rssBytes(pid: number): number {
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
