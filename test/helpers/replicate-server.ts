// A local server speaking Replicate's predictions API (create, get, cancel, and the output file),
// for tests that run generation jobs end to end. Each test decides how a poll is answered.
import { createServer, type ServerResponse } from 'node:http'
import { randomUUID } from 'node:crypto'
import { json, png } from './provider-server.js'

export type Prediction = {
  id: string
  prompt: string
  /** When each poll arrived (ms since the epoch). */
  polls: number[]
  canceled: boolean
  finished: boolean
}

export type Answer = { status: number; body: object; headers?: Record<string, string> }

export type ReplicateBehaviour = {
  /** Runs before the create is answered: a test can hold it back. */
  beforeCreate?(p: Prediction): Promise<void> | void
  /** Runs before the output file is served (to hold a download). */
  beforeOutput?(): Promise<void> | void
  /** How a poll of `p` (already counted in `p.polls`) is answered; `succeeded()` is the success answer. */
  poll(p: Prediction, succeeded: () => Answer): Answer
}

export const TOKEN = 'r8_test'

export async function replicateServer(t: { teardown(fn: () => unknown): void }, behaviour: ReplicateBehaviour) {
  const predictions = new Map<string, Prediction>()
  const seen = { created: 0, polls: 0, cancels: [] as string[], maxActive: 0 }
  const active = () => [...predictions.values()].filter((p) => !p.finished && !p.canceled).length
  const send = (res: ServerResponse, a: Answer) => json(res, a.status, a.body, a.headers)
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    // Output files are public, like replicate.delivery URLs.
    if (req.method === 'GET' && url.pathname === '/out.png') {
      await behaviour.beforeOutput?.()
      return png(res)
    }
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(res, 401, { detail: 'Unauthenticated' })
    if (req.method === 'POST' && /^\/v1\/models\/[^/]+\/[^/]+\/predictions$/.test(url.pathname)) {
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { input: { prompt: string } }
      const p: Prediction = { id: randomUUID(), prompt: body.input.prompt, polls: [], canceled: false, finished: false }
      predictions.set(p.id, p)
      seen.created += 1
      seen.maxActive = Math.max(seen.maxActive, active())
      await behaviour.beforeCreate?.(p)
      return json(res, 201, { id: p.id, status: 'starting', output: null, error: null })
    }
    const m = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(url.pathname)
    const p = m ? predictions.get(m[1] as string) : undefined
    if (!p) return json(res, 404, { detail: 'Not found' })
    if (m?.[2]) {
      p.canceled = true
      seen.cancels.push(p.id)
      return json(res, 200, { id: p.id, status: 'canceled' })
    }
    p.polls.push(Date.now())
    seen.polls += 1
    const answer = behaviour.poll(p, () => ({ status: 200, body: { id: p.id, status: 'succeeded', output: [`${base()}/out.png`] } }))
    if ((answer.body as { status?: string }).status === 'succeeded' || (answer.body as { status?: string }).status === 'failed')
      p.finished = true
    return send(res, answer)
  })
  const base = () => `http://127.0.0.1:${(server.address() as { port: number }).port}`
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  )
  return { url: base(), predictions, seen }
}
