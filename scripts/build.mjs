// Compiles the service into dist/ (ES modules: the entries and the chunks they import at first use,
// dependencies left to node_modules), which
// `npm start` runs with plain Node: no TypeScript loader thread at run time (about 70 MiB resident
// less). It takes about half a second, so `npm start` builds every time and dist/ is never older
// than src/. Usage: node scripts/build.mjs [--outdir DIR] [ENTRY.ts ...] (default src/server.ts; the image
// conversion worker is always built too).
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { build } from 'esbuild'

const args = process.argv.slice(2)
let outdir = 'dist'
const at = args.indexOf('--outdir')
if (at !== -1) [, outdir] = args.splice(at, 2)
// The display conversion's and the screen renderer's workers are loaded by file name
// (src/images/conversion-pool.ts, src/screens/render-pool.ts), so every bundle gets them beside itself.
const entries = [...(args.length ? args : ['src/server.ts']), 'src/images/convert-worker.ts', 'src/screens/render-worker.ts']
const result = await build({
  entryPoints: entries.map((e) => ({
    in: e,
    out: e === 'src/screens/render-worker.ts' ? 'screen-render-worker' : e.replace(/^.*\//, '').replace(/\.ts$/, ''),
  })),
  outdir,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Dependencies stay in node_modules (native modules, and files they read beside themselves).
  packages: 'external',
  // A module the service imports with import() at first use becomes a chunk of its own, loaded
  // then with the packages it imports: in one file every package's import is hoisted to the top and
  // loaded at start (the AWS SDK, amqplib, mqtt.js, PGlite, liquidjs... about 9 MiB of heap and
  // more resident, whether or not the configuration uses them).
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  // NODE_OPTIONS=--enable-source-maps maps stack traces to src/ (about 12 MiB resident).
  sourcemap: 'linked',
  logLevel: 'warning',
  write: false,
})
// esbuild escapes non-ASCII characters in code but keeps the comments it keeps as written, and one
// "×" in a comment makes V8 hold the whole module's source as two-byte characters: twice its
// size for the life of the process (0.9 MiB for the service's bundle). Replaced one UTF-16 unit
// for one, so the source maps' columns still hold.
for (const file of result.outputFiles) {
  mkdirSync(dirname(file.path), { recursive: true })
  writeFileSync(file.path, file.path.endsWith('.js') ? file.text.replace(/[\u0080-\uffff]/g, '?') : file.contents)
}
