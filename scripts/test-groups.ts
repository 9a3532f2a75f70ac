// Prints the entry files of the test groups, one per line: all of them, or with --backing only those
// whose outcome depends on the database or Redis (.ci/run's second pass runs these).
import { entryFile, type GroupName, groups } from '../test/groups.js'

const backingOnly = process.argv.includes('--backing')
for (const [name, group] of Object.entries(groups))
  if (!backingOnly || group.backing) console.log(`test/groups/${entryFile(name as GroupName)}`)
