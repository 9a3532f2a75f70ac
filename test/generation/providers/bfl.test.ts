// The Black Forest Labs provider against a local server speaking the BFL API.
import t from 'tap'
import type { ServerResponse } from 'node:http'
import type { GenerationInput, ProviderJob, StartResult } from '../../../src/generation/provider.js'
import { bflDimension, createBflProvider } from '../../../src/generation/providers/bfl.js'
import { isTrustedUrl } from '../../../src/generation/providers/http.js'
import {
  download,
  json,
  PNG,
  png,
  providerError,
  silence,
  startFakeServer,
  until,
  type FakeServer,
  type Recorded,
} from '../../helpers/provider-server.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const KEY = 'bfl-key-0123456789'

const input: GenerationInput = {
  prompt: 'an owl made of paper',
  negativePrompt: 'ignored by BFL',
  width: 800,
  height: 480,
  model: 'flux-pro-1.1',
  seed: 9001,
}

type Step = Record<string, unknown>

/** A BFL-shaped server: each task answers the given sequence of get_result bodies, the last repeating. */
async function bflServer(t: Test, steps: (fake: FakeServer, id: string) => Step[], pollingHost?: () => string) {
  const polls = new Map<string, number>()
  let fake!: FakeServer
  fake = await startFakeServer(t, (req: Recorded, res: ServerResponse) => {
    if (req.method === 'GET' && req.path.startsWith('/delivery/')) return png(res)
    if (req.headers['x-key'] !== KEY) return json(res, 403, { detail: 'Not authenticated - Invalid Authentication' })
    if (req.method === 'POST' && req.path === '/v1/flux-pro-1.1') {
      const id = `task-${fake.requests.length}`
      return json(res, 200, {
        id,
        polling_url: `${pollingHost ? pollingHost() : fake.url}/v1/get_result?id=${id}`,
        cost: 4,
        input_mp: 0,
        output_mp: 0.38,
      })
    }
    const m = /^\/v1\/get_result\?id=([\w-]+)$/.exec(req.path)
    if (req.method === 'GET' && m) {
      const id = m[1]!
      const n = polls.get(id) ?? 0
      polls.set(id, n + 1)
      const seq = steps(fake, id)
      return json(res, 200, { id, progress: null, details: null, result: null, ...seq[Math.min(n, seq.length - 1)] })
    }
    return json(res, 404, { detail: 'Not Found' })
  })
  return fake
}

const job = (s: StartResult): ProviderJob => ({ providerJobId: s.providerJobId, state: s.state ?? {}, input })

t.test('a task goes Pending → Pending with progress → Ready, and result.sample serves the image', async (t) => {
  const fake = await bflServer(t, (f, id) => [
    { status: 'Pending' },
    { status: 'Pending', progress: 0.4 },
    {
      status: 'Ready',
      result: {
        sample: `${f.url}/delivery/${id}/sample.png?se=2025-01-01&sig=abc`,
        prompt: input.prompt,
        seed: input.seed,
        start_time: 1,
        end_time: 2,
        duration: 1,
      },
    },
  ])
  const provider = createBflProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  t.equal(provider.name, 'bfl')

  const started = await provider.start(input)
  const submit = fake.requests[0]!
  t.equal(submit.method, 'POST')
  t.equal(submit.path, '/v1/flux-pro-1.1')
  t.equal(submit.headers['x-key'], KEY)
  t.equal(submit.headers.authorization, undefined, 'BFL takes the key in x-key only')
  t.same(submit.body, { prompt: input.prompt, width: 800, height: 480, seed: 9001 })
  t.same(started, { providerJobId: 'task-1', state: { pollingUrl: `${fake.url}/v1/get_result?id=task-1` } })

  const j = job(started)
  t.same(await provider.poll(j), { status: 'running' })
  t.same(await provider.poll(j), { status: 'running', progress: 40 }, 'progress 0..1 becomes a percentage')
  const done = await provider.poll(j)
  const url = `${fake.url}/delivery/task-1/sample.png?se=2025-01-01&sig=abc`
  t.same(done, { status: 'succeeded', outputs: [{ url }] })
  const polls = fake.requests.slice(1)
  t.same(
    polls.map((r) => r.path),
    Array(3).fill('/v1/get_result?id=task-1'),
  )
  t.ok(polls.every((r) => r.headers['x-key'] === KEY))

  const image = await download(url)
  t.equal(image.contentType, 'image/png')
  t.ok(image.bytes.equals(PNG))
})

t.test('sizes are rounded to the multiples of 32 FLUX accepts', async (t) => {
  const fake = await bflServer(t, () => [{ status: 'Pending' }])
  const provider = createBflProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  await provider.start({ ...input, width: 1200, height: 825 })
  t.same(fake.requests[0]!.body, { prompt: input.prompt, width: 1216, height: 832, seed: 9001 })
  t.equal(bflDimension(100), 256)
  t.equal(bflDimension(5000), 1440)
})

t.test('moderation, errors and lost tasks are failed jobs', async (t) => {
  const cases: [Step, string, RegExp][] = [
    [
      { status: 'Request Moderated', details: { 'Moderation Reasons': ['Derivative Works Filter'] } },
      'MODERATED',
      /Request Moderated.*Derivative Works Filter/,
    ],
    [{ status: 'Content Moderated', details: { 'Moderation Reasons': ['NSFW'] } }, 'MODERATED', /Content Moderated/],
    [{ status: 'Error' }, 'PROVIDER_FAILED', /generation error/],
    [{ status: 'Task not found' }, 'PROVIDER_NOT_FOUND', /task not found/],
  ]
  for (const [step, code, message] of cases) {
    const fake = await bflServer(t, () => [{ status: 'Pending' }, step])
    const provider = createBflProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
    const j = job(await provider.start(input))
    t.same(await provider.poll(j), { status: 'running' })
    const r = await provider.poll(j)
    t.equal(r.status, 'failed', String(step.status))
    if (r.status === 'failed') {
      t.equal(r.error.code, code)
      t.match(r.error.message, message)
    }
  }
})

t.test('a polling URL on a foreign host is not followed; the key stays on the base host', async (t) => {
  const elsewhere = await startFakeServer(t, (_req, res) =>
    json(res, 200, { status: 'Ready', result: { sample: 'http://evil.invalid/x.png' } }),
  )
  const fake = await bflServer(
    t,
    (f, id) => [{ status: 'Ready', result: { sample: `${f.url}/delivery/${id}.png` } }],
    () => elsewhere.url,
  )
  const provider = createBflProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const started = await provider.start(input)
  t.same(await provider.poll(job(started)), { status: 'succeeded', outputs: [{ url: `${fake.url}/delivery/task-1.png` }] })
  t.equal(elsewhere.requests.length, 0, 'the other host saw nothing')
  t.equal(fake.requests.at(-1)!.path, '/v1/get_result?id=task-1', 'polled on the base instead')
})

t.test('regional BFL hosts are trusted siblings of the base; other hosts are not', async (t) => {
  t.ok(isTrustedUrl('https://api.us1.bfl.ai/v1/get_result?id=1', 'https://api.bfl.ai', true))
  t.ok(isTrustedUrl('https://api.bfl.ai/v1/get_result?id=1', 'https://api.bfl.ai', true))
  t.notOk(isTrustedUrl('https://api.us1.bfl.ai/v1/get_result?id=1', 'https://api.bfl.ai', false), 'fal-style: same origin only')
  t.notOk(isTrustedUrl('https://bfl.ai.evil.example/v1', 'https://api.bfl.ai', true))
  t.notOk(isTrustedUrl('http://api.us1.bfl.ai/v1', 'https://api.bfl.ai', true), 'never downgraded to http')
  t.notOk(isTrustedUrl('https://user:pw@api.bfl.ai/v1', 'https://api.bfl.ai', true))
  t.notOk(isTrustedUrl('http://127.0.0.2:80/', 'http://127.0.0.1:80', true), 'IP bases have no siblings')
  t.notOk(isTrustedUrl(42, 'https://api.bfl.ai', true))
})

t.test('HTTP errors map to retryable or final ProviderErrors, without the key', async (t) => {
  const fake = await bflServer(t, () => [{ status: 'Pending' }])
  const provider = createBflProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const started = await provider.start(input)

  fake.override = (_req, res) => json(res, 429, { detail: 'You have exceeded the number of active tasks (24).' }, { 'retry-after': '2' })
  let err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_RATE_LIMITED')
  t.equal(err.retryable, true)
  t.equal(err.retryAfterMs, 2000)
  t.match(err.message, /active tasks/)

  fake.override = (_req, res) => json(res, 500, { detail: 'Internal Server Error' })
  err = await providerError(() => provider.poll(job(started)))
  t.equal(err.code, 'PROVIDER_UNAVAILABLE')
  t.equal(err.retryable, true)

  fake.override = (req, res) => json(res, 401, { detail: `Invalid key ${String(req.headers['x-key'])}` })
  err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_AUTH')
  t.equal(err.retryable, false)
  t.notMatch(err.message, KEY, 'the echoed key is scrubbed')

  fake.override = (_req, res) => json(res, 402, { detail: 'Insufficient credits' })
  err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_BILLING')
  t.equal(err.retryable, false)

  fake.override = (_req, res) =>
    json(res, 422, { detail: [{ loc: ['body', 'width'], msg: 'Input should be a multiple of 32', type: 'value_error' }] })
  err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_REJECTED')
  t.match(err.message, /body\.width: Input should be a multiple of 32/)
})

t.test('a server that never answers times out as a retryable error', async (t) => {
  const fake = await bflServer(t, () => [{ status: 'Pending' }])
  fake.override = silence
  const provider = createBflProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 150 })
  const err = await providerError(() => provider.start(input))
  t.equal(err.code, 'PROVIDER_TIMEOUT')
  t.equal(err.retryable, true)
  await until(() => fake.requests[0]?.closedEarly === true)
})

t.test('cancel is a no-op: BFL has no cancel endpoint', async (t) => {
  const fake = await bflServer(t, () => [{ status: 'Pending' }])
  const provider = createBflProvider({ key: KEY, baseUrl: fake.url, timeoutMs: 5000 })
  const j = job(await provider.start(input))
  await provider.cancel(j)
  t.equal(fake.requests.length, 1, 'nothing was sent')
})
