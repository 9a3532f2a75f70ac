// The runner's promises, against a local server speaking Replicate's predictions API: it waits
// as long as Retry-After says (but never past the deadline), its backoff is capped, no more than
// GENERATION_CONCURRENCY jobs are at the provider at once, a paid job that hits its deadline is
// refunded and canceled there, a cancel that lands while the provider is starting the job stops
// it there too, and jobs of a provider the instance no longer has end (refunded) at their deadline.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { startApp, type TestApp } from '../helpers/app.js'
import { replicateServer, TOKEN, type Prediction } from '../helpers/replicate-server.js'
import { creditUser, signUpAdmin } from '../helpers/admin.js'
import { makeClient, signUp, uniqueEmail } from '../helpers/client.js'
import { eventually } from '../helpers/mqtt.js'
import { backoffMs, SUCCEED_HOLD_MS } from '../../src/generation/runner.js'
import { generationJob } from '../../src/generation/tables.js'
import { image } from '../../src/images/tables.js'
import { imageIdForJob } from '../../src/generation/service.js'
import { insertJob } from '../../src/generation/repository.js'
import { debit } from '../../src/credits/repository.js'
import { appFetch } from '../helpers/app-fetch.js'

/**
 * The prompt says how a prediction behaves: "hold" stays processing until released,
 * "throttle-N" answers its first poll with 429 and Retry-After N seconds, "wait-create" answers
 * its create only once released.
 */
async function replicatePeer(t: { teardown(fn: () => unknown): void }) {
  const state = { released: false, createReleased: false, outputRequested: false, outputReleased: true }
  const peer = await replicateServer(t, {
    async beforeOutput() {
      state.outputRequested = true
      await eventually(async () => state.outputReleased, 30_000)
    },
    async beforeCreate(p) {
      if (p.prompt.includes('wait-create')) await eventually(async () => state.createReleased, 30_000)
    },
    poll(p, succeeded) {
      const throttle = /throttle-(\d+)/.exec(p.prompt)
      if (throttle && p.polls.length === 1)
        return { status: 429, body: { detail: 'Request was throttled' }, headers: { 'retry-after': throttle[1] as string } }
      if (p.prompt.includes('hold') && !state.released) return { status: 200, body: { id: p.id, status: 'processing', output: null } }
      return succeeded()
    },
  })
  return { ...peer, state }
}

const hdr = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })

async function setup(t: { teardown(fn: () => unknown): void }, env: Record<string, string>) {
  const replicate = await replicatePeer(t)
  const adminEmail = uniqueEmail('admin')
  const svc = await startApp(t, {
    env: {
      GENERATION_POLL_BASE_MS: '50',
      GENERATION_POLL_MAX_MS: '200',
      GENERATION_TICK_MS: '50',
      ADMIN_EMAILS: adminEmail,
      REPLICATE_API_TOKEN: TOKEN,
      REPLICATE_BASE_URL: replicate.url,
      ...env,
    },
  })
  const admin = await signUpAdmin(svc, adminEmail)
  const user = await signUp(makeClient(svc.url).client, uniqueEmail())
  await creditUser(svc, admin.token, user.userId, '20')
  const generate = async (text: string) => {
    const res = await appFetch(`${svc.url}/api/generate`, {
      method: 'POST',
      headers: hdr(user.token),
      body: JSON.stringify({ prompt: { text }, model: 'flux-schnell' }),
    })
    if (res.status !== 202) throw new Error(`generate → ${res.status} ${await res.text()}`)
    return ((await res.json()) as { id: string }).id
  }
  const job = async (id: string) =>
    (await (await appFetch(`${svc.url}/api/generate/${id}`, { headers: hdr(user.token) })).json()) as {
      status: string
      error: { code: string } | null
    }
  const balance = async () =>
    Number(((await (await appFetch(`${svc.url}/api/credits`, { headers: hdr(user.token) })).json()) as { balance: string }).balance)
  return { svc, replicate, user, generate, job, balance }
}

/**
 * One app for the tests that need no setting of their own (each app start is about 1.2 s of CPU):
 * their jobs are told apart by prompt, each ends before the next test starts, and what the peer
 * holds back (create, output) is switched per test.
 */
let shared: Awaited<ReturnType<typeof setup>>
t.before(async () => {
  shared = await setup(t, {})
})

const predictionOf = (replicate: { predictions: Map<string, Prediction> }, prompt: string) =>
  [...replicate.predictions.values()].find((p) => p.prompt === prompt)

const row = async (svc: TestApp, id: string) => (await svc.app.database.db.select().from(generationJob).where(eq(generationJob.id, id)))[0]!

t.test('backoff doubles from the base and stops at the cap', async (t) => {
  const opts = { baseBackoffMs: 50, maxBackoffMs: 200 }
  t.same(
    [0, 1, 2, 3, 4, 30].map((a) => backoffMs(a, opts)),
    [50, 100, 200, 200, 200, 200],
  )
})

t.test('Retry-After is waited for; the backoff between polls never exceeds the cap', async (t) => {
  const { svc, replicate, generate, job } = shared
  const id = await generate('throttle-2 then hold')
  await eventually(async () => (predictionOf(replicate, 'throttle-2 then hold')?.polls.length ?? 0) >= 4, 20_000)
  const p = predictionOf(replicate, 'throttle-2 then hold')!
  const gap = p.polls[1]! - p.polls[0]!
  t.ok(gap >= 1900, `no poll before Retry-After (2 s) ran out: the next came after ${gap} ms`)
  const r = await row(svc, id)
  t.ok(r.nextPollAt.getTime() - r.updatedAt.getTime() <= 200, 'the next poll is at most GENERATION_POLL_MAX_MS away')
  t.ok(r.attempts >= 3)
  replicate.state.released = true
  await eventually(async () => (await job(id)).status === 'succeeded', 20_000)
})

t.test('at most GENERATION_CONCURRENCY jobs at the provider at once', async (t) => {
  const { replicate, generate, job } = await setup(t, { GENERATION_CONCURRENCY: '2' })
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push(await generate(`hold ${i}`))
  await eventually(async () => replicate.predictions.size >= 2)
  // Long enough for an uncapped runner to have started all five (its tick is 50 ms).
  await new Promise((r) => setTimeout(r, 800))
  t.equal(replicate.predictions.size, 2, 'two started; three wait in the queue')
  t.same((await Promise.all(ids.map(job))).map((j) => j.status).filter((s) => s === 'queued').length, 3)
  replicate.state.released = true
  await eventually(async () => (await Promise.all(ids.map(job))).every((j) => j.status === 'succeeded'), 30_000)
  t.equal(replicate.predictions.size, 5, 'then all five ran')
  t.equal(replicate.seen.maxActive, 2, 'never more than two at once')
})

t.test('a paid job at its deadline fails, is refunded and canceled at the provider, even behind a long Retry-After', async (t) => {
  const { svc, replicate, generate, job, balance, user } = await setup(t, { GENERATION_TIMEOUT: '5' })
  const before = await balance()
  const held = await generate('hold forever')
  const throttled = await generate('throttle-3600 asks for an hour')
  t.equal(await balance(), before - 2, 'two jobs paid for')
  for (const id of [held, throttled]) {
    await eventually(async () => (await job(id)).status === 'failed', 20_000)
    const j = await job(id)
    t.equal(j.error?.code, 'TIMEOUT', 'ended at the deadline')
  }
  t.equal(await balance(), before, 'both refunded')
  const heldPrediction = [...replicate.predictions.values()].find((p) => p.prompt === 'hold forever')!
  t.ok(replicate.seen.cancels.includes(heldPrediction.id), 'the provider was asked to cancel')
  const { ledger } = (await (await appFetch(`${svc.url}/api/credits`, { headers: hdr(user.token) })).json()) as {
    ledger: Array<{ reason: string; jobId: string | null; amount: string }>
  }
  for (const id of [held, throttled])
    t.ok(
      ledger.some((l) => l.reason === 'refund' && l.jobId === id && Number(l.amount) === 1),
      `a refund row for ${id.slice(0, 8)}`,
    )
})

t.test('a cancel while the provider is still starting the job stops it there too', async (t) => {
  const { replicate, generate, user, svc, job } = shared
  const id = await generate('wait-create please')
  await eventually(async () => predictionOf(replicate, 'wait-create please'))
  const canceled = await appFetch(`${svc.url}/api/generate/${id}/cancel`, { method: 'POST', headers: hdr(user.token) })
  t.equal(canceled.status, 200)
  t.equal((await job(id)).status, 'canceled')
  replicate.state.createReleased = true
  const prediction = predictionOf(replicate, 'wait-create please')!
  await eventually(async () => replicate.seen.cancels.includes(prediction.id), 10_000)
  t.pass('the prediction created after the cancel was canceled at the provider')
  t.equal((await job(id)).status, 'canceled', 'and the job stays canceled')
})

t.test('jobs of a provider this instance lacks end at their deadline, refunded', async (t) => {
  const { svc, user, balance, job } = shared
  const before = await balance()
  const db = svc.app.database.db
  const id = randomUUID()
  const past = new Date(Date.now() - 1000)
  await db.transaction(async (tx) => {
    await insertJob(tx, {
      id,
      userId: user.userId,
      provider: 'fal',
      model: 'fal-flux-schnell',
      input: { prompt: 'orphan' },
      price: '1.00',
      deadlineAt: past,
      nextPollAt: past,
    })
    await debit(tx, user.userId, '1.00', id)
  })
  // The runner may end it before the next line runs: the ledger shows both moves either way.
  await eventually(async () => (await job(id)).status === 'failed', 10_000)
  t.equal((await job(id)).error?.code, 'PROVIDER_NOT_CONFIGURED')
  t.equal(await balance(), before, 'refunded')
  const { ledger } = (await (await appFetch(`${svc.url}/api/credits`, { headers: hdr(user.token) })).json()) as {
    ledger: Array<{ reason: string; jobId: string | null; amount: string }>
  }
  t.same(
    ledger
      .filter((l) => l.jobId === id)
      .map((l) => [l.reason, Number(l.amount)])
      .sort(),
    [
      ['generation', -1],
      ['refund', 1],
    ],
    'taken, then given back',
  )
})

t.test('a job whose output is being stored is held briefly and renewed, not for its whole deadline', async (t) => {
  // GENERATION_TIMEOUT is the default 600 s: the lease must end long before it.
  const { svc, replicate, generate, job } = shared
  replicate.state.outputReleased = false
  replicate.state.outputRequested = false
  const id = await generate('a slow download')
  await eventually(async () => replicate.state.outputRequested, 20_000)
  const held = await row(svc, id)
  t.equal(held.status, 'running', 'the provider succeeded; the output is being fetched')
  const ahead = held.leaseUntil!.getTime() - Date.now()
  t.ok(
    ahead > 0 && ahead <= SUCCEED_HOLD_MS,
    `the lease ends within ${SUCCEED_HOLD_MS / 1000} s (${Math.round(ahead / 1000)} s ahead), so a runner killed now frees the job that soon, not at its deadline`,
  )
  replicate.state.outputReleased = true
  await eventually(async () => (await job(id)).status === 'succeeded', 20_000)
  t.equal((await row(svc, id)).leaseUntil, null, 'the lease is released when the job ends')
})

t.test('a job taken up again after its runner stored the image keeps that one image', async (t) => {
  const { svc, generate, job } = shared
  const id = await generate('stored once')
  await eventually(async () => (await job(id)).status === 'succeeded', 20_000)
  t.equal((await row(svc, id)).imageId, imageIdForJob(id), 'the image id is derived from the job')
  // As if the runner had died after storing the image and before marking the job: running, no lease.
  await svc.app.database.db
    .update(generationJob)
    .set({ status: 'running', imageId: null, finishedAt: null, leaseUntil: null, nextPollAt: new Date() })
    .where(eq(generationJob.id, id))
  await eventually(async () => (await job(id)).status === 'succeeded', 20_000)
  t.equal((await row(svc, id)).imageId, imageIdForJob(id), 'taken up again, it ends with the same image')
  const images = await svc.app.database.db.select({ id: image.id }).from(image).where(eq(image.jobId, id))
  t.equal(images.length, 1, 'and no second one was stored')
})

t.test('a provider whose answer is ready at once is polled in the same step, not after the backoff', async (t) => {
  // The local provider with no duration says pollAfterMs 0. With a first poll 60 s after the
  // start (the base backoff) and a 250 ms tick, only a poll in the start's own step can finish the
  // job within the wait below; the job never goes back to the table between start and poll.
  const svc = await startApp(t, {
    env: { LOCAL_PROVIDER_DURATION_MS: '0', GENERATION_POLL_BASE_MS: '60000', GENERATION_POLL_MAX_MS: '60000', GENERATION_TICK_MS: '250' },
  })
  const user = await signUp(makeClient(svc.url).client, uniqueEmail())
  const res = await appFetch(`${svc.url}/api/generate`, {
    method: 'POST',
    headers: hdr(user.token),
    body: JSON.stringify({ prompt: { text: 'a lighthouse at noon' }, model: 'local' }),
  })
  t.equal(res.status, 202)
  const { id } = (await res.json()) as { id: string }
  await eventually(async () => (await row(svc, id)).status === 'succeeded', 20_000)
  const r = await row(svc, id)
  t.equal(r.attempts, 0, 'no poll was recorded as a retry: the first poll answered')
  t.ok(r.imageId, 'the image is stored')
})
