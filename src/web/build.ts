// Builds the console (web/, Vite) when its built copy is missing or older than its sources, so
// `npm ci && npm start` serves it with no extra command, and tests get a current one.
import { mkdir, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fromRoot } from '../paths.js'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

const webRoot = `${fromRoot('web')}/`
export const webDist = join(webRoot, 'dist')
const STAMP = '.built'

/** Newest modification time under `dir` (files only), 0 when it does not exist. */
async function newest(dir: string): Promise<number> {
  let max = 0
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [])
  for (const e of entries) {
    const path = join(dir, e.name)
    if (e.isDirectory()) max = Math.max(max, await newest(path))
    else max = Math.max(max, (await stat(path)).mtimeMs)
  }
  return max
}

/** What the built copy depends on: the console's sources, its page, its build settings and the API types it imports. */
async function sourcesChangedAt(): Promise<number> {
  const files = ['index.html', 'vite.config.ts', '../clients/api-types.ts', '../package-lock.json']
  const times = await Promise.all(
    files.map((f) =>
      stat(join(webRoot, f)).then(
        (s) => s.mtimeMs,
        () => 0,
      ),
    ),
  )
  return Math.max(await newest(join(webRoot, 'src')), await newest(join(webRoot, 'public')), ...times)
}

async function consoleIsCurrent(): Promise<boolean> {
  const built = await stat(join(webDist, STAMP)).then(
    (s) => s.mtimeMs,
    () => 0,
  )
  return built > 0 && built >= (await sourcesChangedAt())
}

/**
 * Builds web/ into web/dist unless it is current. One build at a time across processes (parallel
 * test files, a server start): the others wait for the lock and then find it current.
 */
export async function ensureConsoleBuilt(log: (line: string) => void = () => {}): Promise<void> {
  if (await consoleIsCurrent()) return
  await mkdir(webRoot, { recursive: true })
  const lockPath = join(webRoot, '.build-lock')
  const deadline = Date.now() + 180_000
  for (;;) {
    const lock = await open(lockPath, 'wx').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') return undefined
      throw new Error(`cannot build the web console in ${webRoot}: ${err.message}`)
    })
    if (lock) {
      await lock.close()
      break
    }
    // A lock older than three minutes belongs to a build that died.
    const age = await stat(lockPath).then(
      (s) => Date.now() - s.mtimeMs,
      () => 0,
    )
    if (age > 180_000) await rm(lockPath, { force: true })
    if (Date.now() > deadline) throw new Error(`timed out waiting for another console build (${lockPath})`)
    await new Promise((r) => setTimeout(r, 250))
    if (await consoleIsCurrent()) return
  }
  try {
    if (await consoleIsCurrent()) return
    log('building the web console (web/ → web/dist) …')
    const started = Date.now()
    const { build } = await import('vite')
    // Vite sets NODE_ENV=production in this process when it is unset, and leaves it: the service
    // (and every child it starts) would then apply the production checklist it was not started with.
    const nodeEnv = process.env.NODE_ENV
    try {
      await build({ root: webRoot, configFile: join(webRoot, 'vite.config.ts'), logLevel: 'warn' })
    } finally {
      if (nodeEnv === undefined) delete process.env.NODE_ENV
      else process.env.NODE_ENV = nodeEnv
    }
    await precompress(join(webDist, 'assets'))
    await writeFile(join(webDist, STAMP), new Date().toISOString())
    log(`web console built in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  } finally {
    await rm(lockPath, { force: true })
  }
}

/** Writes NAME.br and NAME.gz beside each script and style sheet, which the server sends to browsers that accept them. */
async function precompress(dir: string): Promise<void> {
  const br = promisify(brotliCompress)
  const gz = promisify(gzip)
  for (const name of await readdir(dir)) {
    if (!/\.(js|css|svg)$/.test(name)) continue
    const body = await readFile(join(dir, name))
    await writeFile(join(dir, `${name}.br`), await br(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }))
    await writeFile(join(dir, `${name}.gz`), await gz(body, { level: 9 }))
  }
}
