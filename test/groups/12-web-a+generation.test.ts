// The 'web-a+generation' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('web-a+generation')
