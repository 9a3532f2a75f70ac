// The 'session-race+mqtt-fuzz' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('session-race+mqtt-fuzz')
