#!/usr/bin/env node
// The package's `display-sim` command. The simulator is TypeScript; tsx's loader runs it
// without a build step, the same way `npm run sim` does.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('./cli.ts')
process.exit(await main(process.argv.slice(2)))
