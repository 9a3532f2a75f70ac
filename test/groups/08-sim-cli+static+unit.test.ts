// The 'sim-cli+static+unit' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('sim-cli+static+unit')
