// The 'presence+auth-d' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('presence+auth-d')
