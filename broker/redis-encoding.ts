// What the Redis stores that replace parts of aedes-persistence-redis (wills, subscriptions) share
// with it: its encoding, so what it stored still decodes, and its error-first callback style.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
// aedes-persistence-redis' own dependency, resolved from it.
export const msgpack = createRequire(require.resolve('aedes-persistence-redis'))('msgpack-lite') as {
  encode(v: unknown): Buffer
  decode(b: Buffer): unknown
}

export type Callback = (err: Error | null, ...rest: unknown[]) => void

/** Answers a promise's result through aedes' optional callback style (error first, then value and client). */
export function settle<T>(work: Promise<T>, cb: Callback | undefined, client: unknown): Promise<T> | undefined {
  if (!cb) return work
  work.then(
    (v) => cb(null, v, client),
    (err: Error) => cb(err),
  )
  return undefined
}
