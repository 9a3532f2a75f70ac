// The 'broker-c+outbox' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('broker-c+outbox')
