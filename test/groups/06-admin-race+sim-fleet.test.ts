// The 'admin-race+sim-fleet' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('admin-race+sim-fleet')
