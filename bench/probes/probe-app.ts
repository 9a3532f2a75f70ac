// What the probes share: the app of a given checkout started in the probe's own process on a
// fresh PGlite database, with PGlite's protocol round trips (and the time spent in them) counted,
// and a JSON POST helper. The checkout's own modules are loaded, so an older commit's worktree
// (with its own node_modules) is measured with its own code.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

type Proto = Record<string, (...args: unknown[]) => unknown>
type App = { listen(o: { port: number; host: string }): Promise<unknown>; close(): Promise<void>; mqttPort?: number }
export type Json = Record<string, unknown>

export type ProbeApp = {
  app: App
  url: string
  /** PGlite protocol round trips and the milliseconds spent in them, since the last reset. */
  db: { roundTrips: number; ms: number; reset(): void }
  load(path: string): Promise<Record<string, unknown>>
  post(path: string, body: unknown, token?: string): Promise<{ status: number; json: Json }>
  close(): Promise<void>
}

export async function startProbeApp(root: string, env: Record<string, string>): Promise<ProbeApp> {
  const load = (path: string) => import(pathToFileURL(join(root, path)).href) as Promise<Record<string, unknown>>
  const { PGlite } = (await load('node_modules/@electric-sql/pglite/dist/index.js')) as { PGlite: { prototype: Proto } }
  const db = {
    roundTrips: 0,
    ms: 0,
    reset() {
      db.roundTrips = 0
      db.ms = 0
    },
  }
  for (const name of ['execProtocol', 'execProtocolRaw']) {
    const original = PGlite.prototype[name]
    if (typeof original !== 'function') continue
    PGlite.prototype[name] = async function (this: unknown, ...args: unknown[]) {
      db.roundTrips++
      const t = performance.now()
      try {
        return await original.apply(this, args)
      } finally {
        db.ms += performance.now() - t
      }
    }
  }
  const { loadConfig } = (await load('src/config.ts')) as { loadConfig(env: Record<string, string>): unknown }
  const { buildApp } = (await load('src/app.ts')) as { buildApp(config: unknown): Promise<App> }
  const dataDir = mkdtempSync(join(tmpdir(), 'probe-'))
  const port = 20_000 + Math.floor(Math.random() * 10_000)
  const url = `http://127.0.0.1:${port}`
  const app = await buildApp(
    loadConfig({
      HOST: '127.0.0.1',
      PORT: String(port),
      BASE_URL: url,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      MQTT_PORT: '0',
      RATE_LIMIT_MAX: '1000000',
      RATE_LIMIT_AUTH_MAX: '1000000',
      DEVICE_POLL_INTERVAL: '0',
      ...env,
    }),
  )
  await app.listen({ port, host: '127.0.0.1' })
  return {
    app,
    url,
    db,
    load,
    async post(path, body, token) {
      const res = await fetch(url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: url, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      })
      return { status: res.status, json: (await res.json().catch(() => ({}))) as Json }
    },
    async close() {
      await app.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
