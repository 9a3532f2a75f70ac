// A Redis server of the test's own, to stop and start again while the service runs (the machine's
// shared one must not be restarted under other tests). Keeps nothing on disk, as the machine's:
// a restart loses every key, the worst case for the broker's stored sessions.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createConnection } from 'node:net'
import { freePort } from './app.js'

type Tap = { teardown(fn: () => unknown): void }

export type OwnRedis = { url: string; port: number; stop(): Promise<void>; start(): Promise<void> }

/** Why a Redis server of its own cannot run here (no redis-server on PATH), or undefined when it can. */
export function ownRedisUnavailable(): string | undefined {
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
  return probe.error || probe.status !== 0 ? 'redis-server is not installed (Debian: apt-get install redis-server)' : undefined
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

export async function startOwnRedis(t: Tap): Promise<OwnRedis> {
  const port = await freePort()
  let child: ChildProcess | undefined
  async function start() {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
      {
        stdio: 'ignore',
      },
    )
    for (let i = 0; i < 100 && !(await listening(port)); i++) await new Promise((r) => setTimeout(r, 50))
  }
  async function stop() {
    const c = child
    if (!c || c.exitCode !== null) return
    const exited = new Promise((resolve) => c.once('exit', resolve))
    c.kill('SIGKILL')
    await exited
  }
  await start()
  t.teardown(stop)
  return { url: `redis://127.0.0.1:${port}`, port, stop, start }
}
