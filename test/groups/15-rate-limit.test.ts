// The 'rate-limit' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('rate-limit')
