// test/auth/rate-limit.test.ts in a process of its own (test/groups.ts says why). Named to start
// before the workers: started last, it would run alone at the end of a pass.
import { runOwn } from '../helpers/worker.js'

await runOwn('rate-limit')
