// The 'auth-b+restart-term' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('auth-b+restart-term')
