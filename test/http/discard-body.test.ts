// What is left of a body over the limit is read before the 413 goes out (src/errors.ts), so a
// client still writing reads the answer; a body already read to its end must not be waited for.
import type { IncomingMessage } from 'node:http'
import { PassThrough, Readable } from 'node:stream'
import t from 'tap'
import { discardBody } from '../../src/errors.js'

/** Whether `p` settles before the event loop's next turn (no timer involved). */
async function settlesAtOnce(p: Promise<unknown>): Promise<boolean> {
  const next = new Promise<false>((resolve) => setImmediate(() => resolve(false)))
  return Promise.race([p.then(() => true as const), next])
}

t.test('a body already read to its end is not waited for, whether or not a parser set `complete`', async (t) => {
  // A stream read to its end by a body parser, with no HTTP parser behind it (Fastify's inject).
  const ended = Readable.from([Buffer.alloc(10)])
  for await (const _ of ended) {
    // read to the end, as busboy does before the 413
  }
  t.ok(ended.readableEnded)
  t.ok(await settlesAtOnce(discardBody(ended as unknown as IncomingMessage)), 'ended stream: at once')
  const complete = Object.assign(new PassThrough(), { complete: true })
  t.ok(await settlesAtOnce(discardBody(complete as unknown as IncomingMessage)), 'complete message: at once')
})

t.test('a body still arriving is read to its end, and then the answer may go', async (t) => {
  const body = new PassThrough()
  let settled = false
  const done = discardBody(body as unknown as IncomingMessage).then(() => {
    settled = true
  })
  body.write(Buffer.alloc(1024))
  await new Promise((r) => setImmediate(r))
  t.notOk(settled, 'still waiting while the client sends')
  body.end(Buffer.alloc(1024))
  await done
  t.ok(body.readableEnded, 'the rest was read')
})
