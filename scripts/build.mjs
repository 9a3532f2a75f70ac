// Compiles the service into dist/ (one ES module, dependencies left to node_modules), which
// `npm start` runs with plain Node: no TypeScript loader thread at run time (about 70 MiB resident
// less). It takes about half a second, so `npm start` builds every time and dist/ is never older
// than src/. Usage: node scripts/build.mjs [--outdir DIR] [ENTRY.ts ...] (default src/server.ts; the image
// conversion worker is always built too).
import { build } from 'esbuild'

const args = process.argv.slice(2)
let outdir = 'dist'
const at = args.indexOf('--outdir')
if (at !== -1) [, outdir] = args.splice(at, 2)
// The display conversion's and the screen renderer's workers are loaded by file name
// (src/images/conversion-pool.ts, src/screens/render-pool.ts), so every bundle gets them beside itself.
const entries = [...(args.length ? args : ['src/server.ts']), 'src/images/convert-worker.ts', 'src/screens/render-worker.ts']
await build({
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
  // NODE_OPTIONS=--enable-source-maps maps stack traces to src/ (about 12 MiB resident).
  sourcemap: 'linked',
  logLevel: 'warning',
})
