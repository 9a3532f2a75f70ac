// `npm run build:web` (and before `npm start`): builds the console when it is missing or stale.
import { ensureConsoleBuilt } from '../src/web/build.js'

try {
  await ensureConsoleBuilt((line) => console.log(line))
} catch (err) {
  console.error(`could not build the web console: ${(err as Error).message}`)
  process.exit(1)
}
