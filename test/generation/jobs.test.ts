// Generation jobs through the real app against a local server speaking Replicate's predictions
// API: credits (exact debit, refund, 402, no double spend), Retry-After, failure, cancel,
// deadline, bad input, and a restart in the middle of polling.
import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { randomUUID } from 'node:crypto'
import sharp from 'sharp'
import { startApp, type TestApp } from '../helpers/app.js'
import { creditUser, signUpAdmin } from '../helpers/admin.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually } from '../helpers/mqtt.js'

type Prediction = { id: string; prompt: string; polls: number; canceled: boolean }

/** Replicate's shape: POST /v1/models/{owner}/{name}/predictions, GET /v1/predictions/{id}, POST …/cancel. */
async function replicateServer(t: { teardown(fn: () => unknown): void }) {
  const predictions = new Map<string, Prediction>()
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).png().toBuffer()
  const seen = { created: 0, polls: 0, cancels: 0, throttled: 0 }
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify(body))
    }
    const url = new URL(req.url ?? '/', 'http://x')
    // Output files are public, like replicate.delivery URLs.
    if (req.method === 'GET' && url.pathname === '/out.png') {
      res.writeHead(200, { 'content-type': 'image/png' })
      return res.end(png)
    }
    if (req.headers.authorization !== 'Bearer r8_test') return send(401, { detail: 'Unauthenticated' })
    if (req.method === 'POST' && /^\/v1\/models\/[^/]+\/[^/]+\/predictions$/.test(url.pathname)) {
      const chunks: Buffer[] = []
      for await (const c of req) chunks.push(c as Buffer)
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { input: { prompt: string } }
      const p = { id: randomUUID(), prompt: body.input.prompt, polls: 0, canceled: false }
      predictions.set(p.id, p)
      seen.created += 1
      return send(201, { id: p.id, status: 'starting', output: null, error: null })
    }
    const m = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(url.pathname)
    const p = m ? predictions.get(m[1] as string) : undefined
    if (!p) return send(404, { detail: 'Not found' })
    if (m?.[2]) {
      p.canceled = true
      seen.cancels += 1
      return send(200, { id: p.id, status: 'canceled' })
    }
    p.polls += 1
    seen.polls += 1
    if (p.prompt.includes('slow')) return send(200, { id: p.id, status: 'processing', output: null })
    if (p.polls === 1) {
      seen.throttled += 1
      return send(429, { detail: 'Request was throttled' }, { 'retry-after': '1' })
    }
    if (p.prompt.includes('explode')) return send(200, { id: p.id, status: 'failed', error: 'CUDA out of memory', output: null })
    if (p.polls < 3) return send(200, { id: p.id, status: 'processing', output: null, logs: '50%|█████     | 2/4' })
    return send(200, { id: p.id, status: 'succeeded', output: [`http://127.0.0.1:${(server.address() as { port: number }).port}/out.png`] })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen, predictions }
}

const fast = { GENERATION_POLL_BASE_MS: '50', GENERATION_POLL_MAX_MS: '400', GENERATION_TICK_MS: '50', DEVICE_POLL_INTERVAL: '0' }
const hdr = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

async function generate(svc: TestApp, token: string, body: object) {
  const res = await fetch(`${svc.url}/api/generate`, { method: 'POST', headers: hdr(token), body: JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as { id: string; status: string; code?: string; price: string } }
}

async function waitJob(svc: TestApp, token: string, id: string, until: string[], timeoutMs = 20_000) {
  return eventually(async () => {
    const r = (await (await fetch(`${svc.url}/api/generate/${id}`, { headers: hdr(token) })).json()) as { status: string; error: { code: string } | null; result: unknown }
    return until.includes(r.status) ? r : null
  }, timeoutMs)
}

async function balance(svc: TestApp, token: string): Promise<string> {
  return ((await (await fetch(`${svc.url}/api/credits`, { headers: hdr(token) })).json()) as { balance: string }).balance
}

t.test('paid jobs: debit, Retry-After, success, failure refund, 402, cancel refund, no double spend', async (t) => {
  const replicate = await replicateServer(t)
  const adminEmail = uniqueEmail('admin')
  const svc = await startApp(t, { env: { ...fast, ADMIN_EMAILS: adminEmail, REPLICATE_API_TOKEN: 'r8_test', REPLICATE_BASE_URL: replicate.url } })
  const admin = await signUpAdmin(svc, adminEmail)
  const { client } = makeClient(svc.url)
  const user = await signUp(client, uniqueEmail())

  const short = await generate(svc, user.token, { prompt: { text: 'a fox' }, model: 'flux-schnell' })
  t.equal(short.status, 402)
  t.equal(short.body.code, 'INSUFFICIENT_BALANCE')
  t.equal(replicate.seen.created, 0, 'nothing reached the provider')

  t.equal((await creditUser(svc, user.token, user.userId, '5')).status, 403, 'a user cannot credit themselves')
  const credited = await creditUser(svc, admin.token, user.userId, '2.50')
  t.equal(credited.status, 200)
  t.equal(Number(await balance(svc, user.token)), 2.5)

  const ok = await generate(svc, user.token, { prompt: { text: 'a fox' }, model: 'flux-schnell' })
  t.equal(ok.status, 202)
  t.equal(ok.body.price, '1.00')
  t.equal(Number(await balance(svc, user.token)), 1.5, 'exactly the price was taken at start')
  const done = await waitJob(svc, user.token, ok.body.id, ['succeeded', 'failed'])
  t.equal(done.status, 'succeeded')
  t.ok(replicate.seen.throttled >= 1, 'the provider throttled once (429 + Retry-After) and the job still completed')

  const bad = await generate(svc, user.token, { prompt: { text: 'explode please' }, model: 'flux-schnell' })
  t.equal(Number(await balance(svc, user.token)), 0.5)
  const failed = await waitJob(svc, user.token, bad.body.id, ['succeeded', 'failed'])
  t.equal(failed.status, 'failed')
  t.match(failed.error, { code: 'PROVIDER_FAILED' })
  t.equal(Number(await balance(svc, user.token)), 1.5, 'refunded on failure')

  const slow = await generate(svc, user.token, { prompt: { text: 'slow one' }, model: 'flux-schnell' })
  await eventually(async () => [...replicate.predictions.values()].some((p) => p.prompt === 'slow one' && p.polls > 0))
  const canceled = await fetch(`${svc.url}/api/generate/${slow.body.id}/cancel`, { method: 'POST', headers: hdr(user.token) })
  t.equal(canceled.status, 200)
  t.equal(((await canceled.json()) as { status: string }).status, 'canceled')
  t.ok(replicate.seen.cancels >= 1, 'the provider was asked to cancel')
  t.equal(Number(await balance(svc, user.token)), 1.5, 'refunded on cancel')
  const again = await fetch(`${svc.url}/api/generate/${slow.body.id}/cancel`, { method: 'POST', headers: hdr(user.token) })
  t.equal(again.status, 409)

  // Balance for one job at 1.00: two concurrent starts, exactly one passes.
  const racer = await signUp(makeClient(svc.url).client, uniqueEmail())
  await creditUser(svc, admin.token, racer.userId, '1')
  const [a, b] = await Promise.all([
    generate(svc, racer.token, { prompt: { text: 'slow race a' }, model: 'flux-schnell' }),
    generate(svc, racer.token, { prompt: { text: 'slow race b' }, model: 'flux-schnell' }),
  ])
  t.same([a.status, b.status].sort(), [202, 402], 'one job starts, the other gets 402')
  t.equal(Number(await balance(svc, racer.token)), 0, 'never below zero')
  const ledger = (await (await fetch(`${svc.url}/api/credits`, { headers: hdr(racer.token) })).json()) as { ledger: Array<{ amount: string; reason: string }> }
  t.same(ledger.ledger.map((l) => [l.reason, Number(l.amount)]).sort(), [['admin_credit', 1], ['generation', -1]].sort(), 'every change is a ledger row')
})

t.test('bad input and ownership', async (t) => {
  const svc = await startApp(t, { env: fast })
  const { client } = makeClient(svc.url)
  const owner = await signUp(client, uniqueEmail())
  const other = await signUp(makeClient(svc.url).client, uniqueEmail())
  const cases: Array<[object, number, string]> = [
    [{ prompt: { text: 'x' }, model: 'no-such-model' }, 400, 'VALIDATION_ERROR'],
    [{ prompt: { text: '' } }, 400, 'VALIDATION_ERROR'],
    [{ prompt: { text: 'x'.repeat(1001) } }, 400, 'VALIDATION_ERROR'],
    [{ prompt: { text: 'x', size: { width: 5000, height: 10 } } }, 400, 'VALIDATION_ERROR'],
    [{}, 400, 'VALIDATION_ERROR'],
    [{ promptId: 'nope' }, 404, 'PROMPT_NOT_FOUND'],
    [{ prompt: { text: 'x' }, model: 'flux-schnell' }, 400, 'PROVIDER_NOT_CONFIGURED'],
    [{ prompt: { text: 'x' }, deviceId: 'not-a-device' }, 404, 'DEVICE_NOT_FOUND'],
  ]
  for (const [body, status, code] of cases) {
    const r = await generate(svc, owner.token, body)
    t.equal(r.status, status, JSON.stringify(body))
    t.equal(r.body.code, code, JSON.stringify(body))
  }
  const mine = await generate(svc, owner.token, { prompt: { text: 'mine' } })
  t.equal(mine.status, 202)
  const peek = await fetch(`${svc.url}/api/generate/${mine.body.id}`, { headers: hdr(other.token) })
  t.equal(peek.status, 404, "someone else's job is not found")
  t.equal((await fetch(`${svc.url}/api/generate/${randomUUID()}`, { headers: hdr(owner.token) })).status, 404, 'unknown job id')
  t.equal((await fetch(`${svc.url}/api/generate/${mine.body.id}`)).status, 401, 'no session')
  const prompts = await fetch(`${svc.url}/api/prompts`, { method: 'POST', headers: hdr(owner.token), body: JSON.stringify({ text: 'x', template: 'nope' }) })
  t.equal(prompts.status, 400)
})

t.test('a job survives a restart in the middle of polling; a deadline fails and refunds', async (t) => {
  const env = { ...fast, LOCAL_PROVIDER_DURATION_MS: '3000' }
  const first = await startApp(t, { env })
  const { client } = makeClient(first.url)
  const user = await signUp(client, uniqueEmail())
  const started = await generate(first, user.token, { prompt: { text: 'across a restart' } })
  await waitJob(first, user.token, started.body.id, ['running'], 10_000)
  await first.close()
  const second = await startApp(t, { env, reuse: { dataDir: first.dataDir, databaseUrl: first.config.databaseUrl, redisPrefix: first.config.redisPrefix } })
  const done = await waitJob(second, user.token, started.body.id, ['succeeded', 'failed'])
  t.equal(done.status, 'succeeded', 'the restarted service resumed and finished the job')
  t.ok(done.result, 'with its images')

  const slow = await startApp(t, { env: { ...fast, LOCAL_PROVIDER_DURATION_MS: '600000', GENERATION_TIMEOUT: '5' } })
  const u2 = await signUp(makeClient(slow.url).client, uniqueEmail())
  const late = await generate(slow, u2.token, { prompt: { text: 'never done' } })
  const timedOut = await waitJob(slow, u2.token, late.body.id, ['failed', 'succeeded'], 20_000)
  t.equal(timedOut.status, 'failed')
  t.match(timedOut.error, { code: 'TIMEOUT' })
})
