// The 'devices-b+password-race' group of test/groups.ts: its files in one process.
import { runGroup } from '../helpers/group.js'

await runGroup('devices-b+password-race')
