// A local HTTP server for image-provider tests: records every request (method, path, headers, JSON
// body) and answers through the test's handler, so each test speaks one provider's real API.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import sharp from 'sharp'
import { ProviderError, type ImageProvider, type PollResult, type ProviderJob } from '../../src/generation/provider.js'

type Test = { teardown(fn: () => unknown): void }

export type Recorded = { method: string; path: string; headers: IncomingHttpHeaders; body: any; closedEarly: boolean }
export type Handler = (req: Recorded, res: ServerResponse) => void | Promise<void>

export type FakeServer = {
  url: string
  requests: Recorded[]
  /** Answers the next requests before the normal handler (errors, silence); null to stop. */
  override: Handler | null
}

/** A small real PNG: the "image" every fake provider serves. */
export const PNG = await sharp({ create: { width: 4, height: 3, channels: 3, background: { r: 200, g: 30, b: 30 } } })
  .png()
  .toBuffer()

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify(body))
}

export function png(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(PNG.length) })
  res.end(PNG)
}

/** Never answers: the client's timeout is what ends the request. */
export const silence: Handler = () => {}

export async function startFakeServer(t: Test, handler: Handler): Promise<FakeServer> {
  const fake: FakeServer = { url: '', requests: [], override: null }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      let body: unknown
      if (text) {
        try {
          body = JSON.parse(text)
        } catch {
          body = text
        }
      }
      const rec: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, closedEarly: false }
      // The client went away before we answered (its timeout or a cancel aborted the request).
      res.on('close', () => {
        if (!res.writableFinished) rec.closedEarly = true
      })
      fake.requests.push(rec)
      const h = fake.override ?? handler
      Promise.resolve(h(rec, res)).catch((err) => {
        if (!res.headersSent) json(res, 599, { detail: `fake server error: ${(err as Error).message}` })
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return fake
}

/** Runs fn and returns the ProviderError it rejects with (fails the test if it resolves). */
export async function providerError(fn: () => Promise<unknown>): Promise<ProviderError> {
  try {
    await fn()
  } catch (err) {
    if (err instanceof ProviderError) return err
    throw err
  }
  throw new Error('expected a ProviderError, but the call succeeded')
}

/** Polls until the status is not one of `while`; the test's own timeout bounds it. */
export async function pollWhile(provider: ImageProvider, job: ProviderJob, statuses: PollResult['status'][]): Promise<PollResult> {
  for (;;) {
    const r = await provider.poll(job)
    if (!statuses.includes(r.status)) return r
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Polls while the job reads running until poll throws; returns that ProviderError. */
export async function pollUntilError(provider: ImageProvider, job: ProviderJob): Promise<ProviderError> {
  return providerError(() => pollWhile(provider, job, ['queued', 'running']))
}

/** Resolves once the condition holds; the test's own timeout bounds the wait. */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

/** Fetches an output URL the provider returned, as a client would. */
export async function download(url: string): Promise<{ contentType: string | null; bytes: Buffer }> {
  const res = await fetch(url)
  return { contentType: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) }
}
