// One of the suite's worker processes (test/helpers/worker.ts): takes test files from the run's
// queue until none is left.
import { runWorker } from '../helpers/worker.js'

await runWorker()
