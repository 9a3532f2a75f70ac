// The 'broker-b+auth-c' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('broker-b+auth-c')
