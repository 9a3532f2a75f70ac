// Batches the broker's per-connection database work. A fleet reconnecting after a restart means
// thousands of CONNECTs within seconds; one query per device each time leaves CONNACKs waiting in
// the pool behind presence writes (the connect-storm benchmark measured ~100 connects/s that way).
import DataLoader from 'dataloader'

/**
 * A DataLoader with no cache that runs at most `concurrency` batches at once: keys that arrive
 * while every slot is busy wait and go out together in the next batch, so batches grow with load
 * instead of queries piling up, and an idle broker still answers after one turn of the event loop.
 */
export function batched<K, V>(
  fn: (keys: readonly K[]) => Promise<ReadonlyArray<V | Error>>,
  opts: { concurrency: number; maxBatchSize: number },
): DataLoader<K, V> {
  let running = 0
  const waiting: Array<() => void> = []
  const release = () => {
    const next = waiting.shift()
    if (next) next()
    else running -= 1
  }
  return new DataLoader<K, V>(
    async (keys) => {
      try {
        return await fn(keys)
      } finally {
        release()
      }
    },
    {
      cache: false,
      maxBatchSize: opts.maxBatchSize,
      batchScheduleFn(dispatch) {
        if (running < opts.concurrency) {
          running += 1
          // setImmediate, not a microtask: CONNECTs read in the same turn of the loop join the batch.
          setImmediate(dispatch)
        } else waiting.push(dispatch)
      },
    },
  )
}
