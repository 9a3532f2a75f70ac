// The 'web-b+generation-jobs' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('web-b+generation-jobs')
