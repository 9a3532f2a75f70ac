// The 'broker-a+restart-kill' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('broker-a+restart-kill')
