// test/broker/cluster-errors.test.ts in a process of its own (test/groups.ts says why).
import { runOwn } from '../helpers/worker.js'

await runOwn('cluster-errors')
