// A TypeScript child process driven over the IPC channel: request {id, cmd, ...} → reply {id, result | error}.
import { execFileSync, fork, type ChildProcess } from 'node:child_process'

export type Child = {
  pid: number
  ready: Record<string, unknown>
  call<T = unknown>(cmd: string, args?: Record<string, unknown>, timeoutMs?: number): Promise<T>
  /** Asks nicely (the `close` command) when `graceful`, then kills; resolves once the process is gone. */
  stop(opts?: { graceful?: boolean }): Promise<void>
}

export async function startChild(
  file: string,
  opts: {
    env?: Record<string, string | undefined>
    execArgv?: string[]
    readyTimeoutMs?: number
    /** Raises the child's soft open-files limit to this (up to the hard limit; see openFilesWrapper). */
    openFiles?: number
  } = {},
): Promise<Child> {
  const wrapper = opts.openFiles ? openFilesWrapper(opts.openFiles) : undefined
  const proc: ChildProcess = fork(file, [], {
    env: opts.env ?? process.env,
    ...(wrapper ? { execPath: wrapper.execPath } : {}),
    // BENCH_CPU_PROF=DIR: V8 CPU profiles of our server (open them in Chrome DevTools).
    execArgv: [
      ...(wrapper?.execArgv ?? []),
      // A bundle (our server, see lib/ours.ts) runs on plain node; TypeScript files through tsx.
      ...(file.endsWith('.ts') ? ['--import', 'tsx'] : []),
      ...(opts.execArgv ?? []),
      ...(process.env.BENCH_CPU_PROF && /ours\.(ts|js)$/.test(file) ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>()
  let seq = 0
  let exited = false
  const exit = new Promise<void>((resolve) =>
    proc.once('exit', (code, signal) => {
      exited = true
      for (const w of waiting.values()) {
        clearTimeout(w.timer)
        w.reject(new Error(`${file} exited (${code ?? signal})`))
      }
      waiting.clear()
      resolve()
    }),
  )
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} not ready in time`)), opts.readyTimeoutMs ?? 60_000)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${file} exited before it was ready (${code})`))
    })
    proc.on('message', (m: { ready?: boolean; id?: number; result?: unknown; error?: string }) => {
      if (m.ready) {
        clearTimeout(timer)
        resolve(m as Record<string, unknown>)
        return
      }
      const w = m.id === undefined ? undefined : waiting.get(m.id)
      if (!w) return
      waiting.delete(m.id!)
      clearTimeout(w.timer)
      if (m.error) w.reject(new Error(m.error))
      else w.resolve(m.result)
    })
  })
  const child: Child = {
    pid: proc.pid!,
    ready,
    call<T>(cmd: string, args: Record<string, unknown> = {}, timeoutMs = 120_000) {
      return new Promise<T>((resolve, reject) => {
        if (exited) return reject(new Error(`${file} has exited`))
        const id = ++seq
        const timer = setTimeout(() => {
          waiting.delete(id)
          reject(new Error(`${file}: ${cmd} timed out after ${timeoutMs} ms`))
        }, timeoutMs)
        waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, timer })
        proc.send({ id, cmd, ...args })
      })
    },
    async stop({ graceful = true } = {}) {
      if (exited) return
      if (graceful) {
        await Promise.race([child.call('close', {}, 30_000).catch(() => {}), exit])
        await Promise.race([exit, new Promise((r) => setTimeout(r, 5000))])
      }
      if (!exited) proc.kill('SIGKILL')
      await exit
    },
  }
  return child
}

/**
 * Node cannot set its own rlimits, and a fleet process needs more open files than the usual soft
 * limit of 1,024: fork runs `sh -c 'ulimit -n N; exec node …'` instead of node, so the child (same
 * pid after exec, same IPC channel) starts with the raised soft limit.
 */
function openFilesWrapper(n: number): { execPath: string; execArgv: string[] } {
  return { execPath: '/bin/sh', execArgv: ['-c', `ulimit -n ${Math.floor(n)} && exec "$0" "$@"`, process.execPath] }
}

/** The soft and hard open-files limits a child of this process starts with. */
export function openFileLimits(): { soft: number; hard: number } {
  const read = (flag: string) => {
    const out = execFileSync('/bin/sh', ['-c', `ulimit ${flag}`], { encoding: 'utf8' }).trim()
    return out === 'unlimited' ? Number.POSITIVE_INFINITY : Number(out)
  }
  return { soft: read('-Sn'), hard: read('-Hn') }
}
