// The 'generation-runner+devices-a' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('generation-runner+devices-a')
