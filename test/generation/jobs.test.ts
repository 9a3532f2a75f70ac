// Generation jobs through the real app against a local server speaking Replicate's predictions
// API: credits (exact debit, refund, 402, no double spend), Retry-After, failure, cancel,
// deadline, bad input, and a restart in the middle of polling.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { startApp, type TestApp } from '../helpers/app.js'
import { replicateServer, TOKEN } from '../helpers/replicate-server.js'
import { creditUser, signUpAdmin } from '../helpers/admin.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually } from '../helpers/mqtt.js'
import { eq } from 'drizzle-orm'
import { prompt } from '../../src/prompts/tables.js'
import { generationJob } from '../../src/generation/tables.js'
import { openDatabase } from '../../src/db/client.js'
import { appFetch } from '../helpers/app-fetch.js'

/**
 * The first poll of each prediction is throttled (429 + Retry-After 1); then "slow" stays
 * processing, "explode" fails, the rest succeed on their third poll.
 */
async function replicatePeer(t: { teardown(fn: () => unknown): void }) {
  const counts = { throttled: 0 }
  const peer = await replicateServer(t, {
    poll(p, succeeded) {
      if (p.prompt.includes('slow')) return { status: 200, body: { id: p.id, status: 'processing', output: null } }
      if (p.polls.length === 1) {
        counts.throttled += 1
        return { status: 429, body: { detail: 'Request was throttled' }, headers: { 'retry-after': '1' } }
      }
      if (p.prompt.includes('explode'))
        return { status: 200, body: { id: p.id, status: 'failed', error: 'CUDA out of memory', output: null } }
      if (p.polls.length < 3) return { status: 200, body: { id: p.id, status: 'processing', output: null, logs: '50%|█████     | 2/4' } }
      return succeeded()
    },
  })
  return { ...peer, counts }
}

const fast = { GENERATION_POLL_BASE_MS: '50', GENERATION_POLL_MAX_MS: '400', GENERATION_TICK_MS: '50', DEVICE_POLL_INTERVAL: '0' }
const hdr = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

async function generate(svc: TestApp, token: string, body: object) {
  const res = await appFetch(`${svc.url}/api/generate`, { method: 'POST', headers: hdr(token), body: JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as { id: string; status: string; code?: string; price: string } }
}

async function waitJob(svc: TestApp, token: string, id: string, until: string[], timeoutMs = 20_000) {
  return eventually(async () => {
    const r = (await (await appFetch(`${svc.url}/api/generate/${id}`, { headers: hdr(token) })).json()) as {
      status: string
      error: { code: string } | null
      result: unknown
    }
    return until.includes(r.status) ? r : null
  }, timeoutMs)
}

async function balance(svc: TestApp, token: string): Promise<string> {
  return ((await (await appFetch(`${svc.url}/api/credits`, { headers: hdr(token) })).json()) as { balance: string }).balance
}

t.test('paid jobs: debit, Retry-After, success, failure refund, 402, cancel refund, no double spend', async (t) => {
  const replicate = await replicatePeer(t)
  const adminEmail = uniqueEmail('admin')
  const svc = await startApp(t, {
    env: { ...fast, ADMIN_EMAILS: adminEmail, REPLICATE_API_TOKEN: TOKEN, REPLICATE_BASE_URL: replicate.url },
  })
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
  t.ok(replicate.counts.throttled >= 1, 'the provider throttled once (429 + Retry-After) and the job still completed')

  const bad = await generate(svc, user.token, { prompt: { text: 'explode please' }, model: 'flux-schnell' })
  t.equal(Number(await balance(svc, user.token)), 0.5)
  const failed = await waitJob(svc, user.token, bad.body.id, ['succeeded', 'failed'])
  t.equal(failed.status, 'failed')
  t.match(failed.error, { code: 'PROVIDER_FAILED' })
  t.equal(Number(await balance(svc, user.token)), 1.5, 'refunded on failure')

  const slow = await generate(svc, user.token, { prompt: { text: 'slow one' }, model: 'flux-schnell' })
  await eventually(async () => [...replicate.predictions.values()].some((p) => p.prompt === 'slow one' && p.polls.length > 0))
  const canceled = await appFetch(`${svc.url}/api/generate/${slow.body.id}/cancel`, { method: 'POST', headers: hdr(user.token) })
  t.equal(canceled.status, 200)
  t.equal(((await canceled.json()) as { status: string }).status, 'canceled')
  t.ok(replicate.seen.cancels.length >= 1, 'the provider was asked to cancel')
  t.equal(Number(await balance(svc, user.token)), 1.5, 'refunded on cancel')
  const again = await appFetch(`${svc.url}/api/generate/${slow.body.id}/cancel`, { method: 'POST', headers: hdr(user.token) })
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
  const ledger = (await (await appFetch(`${svc.url}/api/credits`, { headers: hdr(racer.token) })).json()) as {
    ledger: Array<{ amount: string; reason: string }>
  }
  t.same(
    ledger.ledger.map((l) => [l.reason, Number(l.amount)]).sort(),
    [
      ['admin_credit', 1],
      ['generation', -1],
    ].sort(),
    'every change is a ledger row',
  )

  // Twenty at once with credits for four: four start, and only their prompts are stored.
  const crowd = await signUp(makeClient(svc.url).client, uniqueEmail())
  await creditUser(svc, admin.token, crowd.userId, '4')
  const starts = await Promise.all(
    Array.from({ length: 20 }, (_, i) => generate(svc, crowd.token, { prompt: { text: `slow crowd ${i}` }, model: 'flux-schnell' })),
  )
  t.equal(starts.filter((r) => r.status === 202).length, 4, 'four accepted')
  t.equal(starts.filter((r) => r.status === 402).length, 16, 'the rest refused for the balance')
  const stored = await svc.app.database.db.select({ text: prompt.text }).from(prompt).where(eq(prompt.userId, crowd.userId))
  t.equal(stored.length, 4, 'a prompt is stored only with an accepted job')
})

/**
 * One app with the local provider and no Replicate for the bad-input test and the deadline case
 * (an app start is about 1.2 s of CPU): its jobs never finish and fail at 5 s, which neither
 * test's other requests depend on; each test signs up its own people.
 */
let slowApp: TestApp
t.before(async () => {
  slowApp = await startApp(t, { env: { ...fast, LOCAL_PROVIDER_DURATION_MS: '600000', GENERATION_TIMEOUT: '5' } })
})

t.test('bad input and ownership', async (t) => {
  const svc = slowApp
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
  const peek = await appFetch(`${svc.url}/api/generate/${mine.body.id}`, { headers: hdr(other.token) })
  t.equal(peek.status, 404, "someone else's job is not found")
  t.equal((await appFetch(`${svc.url}/api/generate/${randomUUID()}`, { headers: hdr(owner.token) })).status, 404, 'unknown job id')
  t.equal((await appFetch(`${svc.url}/api/generate/${mine.body.id}`)).status, 401, 'no session')
  const prompts = await appFetch(`${svc.url}/api/prompts`, {
    method: 'POST',
    headers: hdr(owner.token),
    body: JSON.stringify({ text: 'x', template: 'nope' }),
  })
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
  const second = await startApp(t, {
    env,
    reuse: { dataDir: first.dataDir, databaseUrl: first.config.databaseUrl, redisPrefix: first.config.redisPrefix },
  })
  const done = await waitJob(second, user.token, started.body.id, ['succeeded', 'failed'])
  t.equal(done.status, 'succeeded', 'the restarted service resumed and finished the job')
  t.ok(done.result, 'with its images')

  // A crash leaves the job's lease held (a clean close releases it): as if the runner had died
  // with ten minutes of lease left.
  const held = await generate(second, user.token, { prompt: { text: 'held by a crashed runner' } })
  await waitJob(second, user.token, held.body.id, ['running'], 10_000)
  await second.close()
  const leaseEnd = new Date(Date.now() + 10 * 60_000)
  const database = openDatabase({ databaseUrl: first.config.databaseUrl, dataDir: first.dataDir })
  await database.db.update(generationJob).set({ leaseUntil: leaseEnd }).where(eq(generationJob.id, held.body.id))
  await database.close()
  const third = await startApp(t, {
    env,
    reuse: { dataDir: first.dataDir, databaseUrl: first.config.databaseUrl, redisPrefix: first.config.redisPrefix },
  })
  if (third.config.redisUrl) {
    // A cluster node cannot tell its own old leases from another node's: the lease stands.
    await new Promise((r) => setTimeout(r, 1500))
    t.equal((await waitJob(third, user.token, held.body.id, ['running'], 5000)).status, 'running', 'in a cluster the lease is waited out')
  } else {
    const resumed = await waitJob(third, user.token, held.body.id, ['succeeded', 'failed'], 20_000)
    t.equal(resumed.status, 'succeeded', 'the only runner takes up at once the job its crashed run held, not after the lease')
  }

  const slow = slowApp
  const u2 = await signUp(makeClient(slow.url).client, uniqueEmail())
  const late = await generate(slow, u2.token, { prompt: { text: 'never done' } })
  const timedOut = await waitJob(slow, u2.token, late.body.id, ['failed', 'succeeded'], 20_000)
  t.equal(timedOut.status, 'failed')
  t.match(timedOut.error, { code: 'TIMEOUT' })
})
